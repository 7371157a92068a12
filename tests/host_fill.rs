//! The host arena's poison fill: non-temporal stores on x86-64 for the aligned body of a large
//! slice, plain ones for its ends. Whatever the slice's start, length and word size, every
//! element ends up the value, and nothing outside the slice is touched. And its first touch:
//! only a block new to the process is touched, timed apart from the values written over it.

use roofprobe::backend::host::arena::{fill_streaming, Arena, Fill, Word};
use roofprobe::backend::host::pool::{allowed_cpus, Pool};
use roofprobe::cases::Precision;

fn fills_exactly<T: Word>(value: T, other: T) {
    // the body path starts at 64 KiB; a start off the 16-byte grid and odd lengths give it a
    // head and a tail
    for len in [0usize, 1, 3, 100, (1 << 16) + 5, (1 << 18) + 1] {
        for skip in 0..4 {
            let mut v = vec![other; len + skip + 2];
            fill_streaming(&mut v[skip + 1..skip + 1 + len], value);
            for (i, x) in v.iter().enumerate() {
                let inside = (skip + 1..skip + 1 + len).contains(&i);
                let want = if inside { value } else { other };
                // by their bits: the poison is a NaN
                assert_eq!(
                    x.word_bits(),
                    want.word_bits(),
                    "len {len} skip {skip} [{i}]"
                );
            }
        }
    }
}

#[test]
fn the_streaming_fill_writes_every_element_and_no_other() {
    fills_exactly(f32::from_bits(0x7FC0_0001), 1.5f32);
    fills_exactly(f64::from_bits(0x7FF8_0000_0000_0001), -2.0f64);
    fills_exactly(0xDEAD_BEEFu32, 7u32);
    fills_exactly(-3i32, 9i32);
    fills_exactly(0xABCDu16, 1u16);
}

/// A pool of the first and last CPUs this process may use (the one twice where it has one), and an
/// arena with no cap.
fn two_workers() -> (Pool, Arena) {
    let cpus = allowed_cpus();
    (
        Pool::new(vec![cpus[0], cpus[cpus.len() - 1]]),
        Arena::new(u64::MAX),
    )
}

/// A block new to the process is first-touched, and that time counted apart; a block lent
/// again is not touched again, and the values written after the touch are all there.
#[test]
fn only_new_blocks_are_first_touched() {
    let (pool, arena) = two_workers();
    let n = (8 << 20) / 4 + 3;
    assert_eq!(arena.touch_secs(), 0.0);
    let a = arena.output(&pool, n, 16, 2.5f32).unwrap();
    let once = arena.touch_secs();
    assert!(once > 0.0);
    assert!(a.iter().all(|x| *x == 2.5));
    drop(a);
    let fill = Fill::Sweep {
        precision: Precision::F32,
    };
    let b = arena.input(&pool, n, 16, fill, |i| i as f32).unwrap();
    assert_eq!(arena.touch_secs(), once);
    assert!(b.iter().enumerate().all(|(i, x)| *x == i as f32));
    let other = Fill::Stream {
        precision: Precision::F32,
        reduction: false,
        array: 0,
    };
    let c = arena
        .input(&pool, n, 16, other, |i| i as f32 + 1.0)
        .unwrap();
    assert!(arena.touch_secs() > once);
    assert!(c.iter().enumerate().all(|(i, x)| *x == i as f32 + 1.0));
}

/// The arena's generation, compiled for the CPU's widest vectors, writes the very words the
/// references name: the sweep's inputs in their bit form ([`intensity::InputForm::word_at`]) against
/// [`intensity::input`], a hash against [`input_bits`], element for element over several check
/// blocks and an odd tail; and the digest it keeps is the digest of what is there.
#[test]
fn generated_inputs_are_the_reference_words() {
    use roofprobe::backend::host::arena::digest;
    use roofprobe::cases::{input_bits, input_bits_keyed, input_key, intensity};
    let (pool, arena) = two_workers();
    let n = (4 << 20) / 4 + 77;
    for p in [Precision::F32, Precision::I32] {
        let form = intensity::input_form(p);
        let a = arena
            .input(&pool, n, 16, Fill::Sweep { precision: p }, |i| {
                form.word_at(i as u64) as u32
            })
            .unwrap();
        for (i, w) in a.iter().enumerate() {
            assert_eq!(u64::from(*w), intensity::input(p, i as u64), "{p:?} [{i}]");
        }
        assert_eq!(a.content().unwrap().digest, digest(&a, 0));
    }
    let form = intensity::input_form(Precision::F64);
    let a = arena
        .input(
            &pool,
            n,
            16,
            Fill::Sweep {
                precision: Precision::F64,
            },
            |i| f64::from_bits(form.word_at(i as u64)),
        )
        .unwrap();
    for (i, x) in a.iter().enumerate() {
        assert_eq!(
            x.to_bits(),
            intensity::input(Precision::F64, i as u64),
            "[{i}]"
        );
    }
    let stream = Fill::Stream {
        precision: Precision::F64,
        reduction: false,
        array: 1,
    };
    let key = input_key(1);
    let b = arena
        .input(&pool, n, 16, stream, |i| {
            f64::from_bits(input_bits_keyed(key, i as u64) >> 3)
        })
        .unwrap();
    for (i, x) in b.iter().enumerate() {
        assert_eq!(x.to_bits(), input_bits(1, i as u64) >> 3, "[{i}]");
    }
    assert_eq!(b.content().unwrap().digest, digest(&b, 0));
}
