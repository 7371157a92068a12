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
/// blocks and an odd tail; and the digest it keeps, where it digests rather than guards its
/// inputs, is the digest of what is there.
#[test]
fn generated_inputs_are_the_reference_words() {
    use roofprobe::backend::host::arena::digest;
    use roofprobe::cases::{input_bits, input_bits_keyed, input_key, intensity};
    let (pool, _) = two_workers();
    let arena = Arena::unguarded(u64::MAX);
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
        assert_eq!(a.content().unwrap().digest, Some(digest(&a, 0)));
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
    assert_eq!(b.content().unwrap().digest, Some(digest(&b, 0)));
}

/// An input asked for again with the same values is the same block, not written again; an
/// output is poisoned every time and holds nothing when it goes back; a tainted input is
/// written again; a digest changes with any one element (an arena that digests its inputs,
/// as every one does where guards cannot be had).
#[test]
fn inputs_are_kept_and_outputs_poisoned() {
    use roofprobe::backend::host::arena::digest;
    let (pool, _) = two_workers();
    let arena = Arena::unguarded(1 << 30);
    let n = (8 << 20) / 4;
    let fill = Fill::Sweep {
        precision: Precision::F32,
    };
    let value = |i: usize| (i % 977) as f32;
    let a = arena.input(&pool, n, 16, fill, value).unwrap();
    let first = a.as_ptr();
    let content = a.content().unwrap();
    assert!(!a.watched());
    let kept = content.digest.unwrap();
    assert_eq!(kept, digest(&a, 0));
    assert_eq!(arena.written().filled_bytes, 8 << 20);
    drop(a);
    let a = arena.input(&pool, n, 16, fill, value).unwrap();
    assert_eq!(a.as_ptr(), first, "the same block");
    assert_eq!(arena.written().filled_bytes, 8 << 20, "not written again");
    assert!(a.iter().enumerate().all(|(i, &v)| v == value(i)));
    let mut c = arena.output(&pool, n, 16, f32::NAN).unwrap();
    assert!(c.iter().all(|v| v.is_nan()));
    c[7] = 1.0;
    drop(c);
    // an output's block holds nothing: asked for as an input, it is written
    let other = Fill::Stream {
        precision: Precision::F32,
        reduction: false,
        array: 0,
    };
    let b = arena.input(&pool, n, 16, other, |i| i as f32).unwrap();
    let w = arena.written();
    assert_eq!((w.filled_bytes, w.poisoned_bytes), (16 << 20, 8 << 20));
    assert_eq!(b[7], 7.0);
    let mut a = a;
    a.taint();
    drop(a);
    drop(b);
    let a = arena.input(&pool, n, 16, fill, value).unwrap();
    assert_eq!(
        arena.written().filled_bytes,
        24 << 20,
        "a tainted input is written again"
    );
    // one element changed, anywhere: the digest differs
    let mut copy: Vec<f32> = a.to_vec();
    for at in [0, 1, n / 2, n - 1] {
        let was = copy[at];
        copy[at] = was + 1.0;
        assert_ne!(digest(&copy, 0), kept, "element {at}");
        copy[at] = was;
    }
    assert_eq!(digest(&copy, 0), kept);
    let mut a = a;
    assert_eq!(a.changed(Some(kept)), None);
    assert!(a
        .changed(Some(kept ^ 1))
        .unwrap()
        .contains("digest differs"));
    assert_eq!(a.content(), None, "tainted");
    // two blocks at once, and the arena holds both until it needs room
    let b = arena.output(&pool, n, 16, 0.0f32).unwrap();
    assert_ne!(b.as_ptr(), a.as_ptr());
    assert_eq!(arena.held_bytes(), 16 << 20);
    // small arrays are their own
    let small = arena.output(&pool, 1000, 16, 0.0f32).unwrap();
    drop(small);
    assert_eq!(arena.held_bytes(), 16 << 20);
}

/// Where guards can be had, an input is watched from when its values are written: read, it
/// stays the same block and is not written again, with no digest kept; one write anywhere
/// in it (here the last element, as a kernel that wrote past its output might) trips the
/// guard, the write goes through, the check says so and the block is written again for
/// the next case. A block taken for an output is writable: poisoning it trips nothing.
#[test]
#[cfg(target_os = "linux")]
fn a_guard_watches_each_input() {
    use roofprobe::backend::host::arena::digest;
    let (pool, _) = two_workers();
    let arena = Arena::new(1 << 30);
    let n = (8 << 20) / 4;
    let fill = Fill::Sweep {
        precision: Precision::F32,
    };
    let value = |i: usize| (i % 977) as f32;
    let mut a = arena.input(&pool, n, 16, fill, value).unwrap();
    assert!(a.watched(), "an arena block is whole pages");
    assert_eq!(
        a.content().unwrap().digest,
        None,
        "no digest where a guard watches"
    );
    assert!(a.iter().enumerate().all(|(i, &v)| v == value(i)));
    assert_eq!(a.changed(None), None, "reads change nothing");
    drop(a);
    let mut a = arena.input(&pool, n, 16, fill, value).unwrap();
    assert!(a.watched());
    assert_eq!(
        arena.written().filled_bytes,
        8 << 20,
        "kept, not written again"
    );
    a[n - 1] = 1.5;
    assert_eq!(a[n - 1], 1.5, "the write went through");
    assert!(a.changed(None).unwrap().contains("guard"));
    assert_eq!(a.content(), None, "tainted");
    drop(a);
    let a = arena.input(&pool, n, 16, fill, value).unwrap();
    assert_eq!(arena.written().filled_bytes, 16 << 20, "written again");
    assert_eq!(a[n - 1], value(n - 1));
    assert!(a.watched());
    // a write no check looked at still taints it when it goes back
    let mut a = a;
    a[0] = 2.0;
    drop(a);
    let a = arena.input(&pool, n, 16, fill, value).unwrap();
    assert_eq!(arena.written().filled_bytes, 24 << 20, "written again");
    let first = a.as_ptr();
    drop(a);
    // the same block, taken for an output: writable, poisoned without a fault
    let c = arena.output(&pool, n, 16, f32::NAN).unwrap();
    assert_eq!(c.as_ptr(), first);
    assert!(!c.read_only());
    assert!(c.iter().all(|v| v.is_nan()));
    drop(c);
    // an arena that does not guard digests instead
    let unguarded = Arena::unguarded(1 << 30);
    let b = unguarded.input(&pool, n, 16, fill, value).unwrap();
    assert!(!b.watched());
    assert_eq!(b.content().unwrap().digest, Some(digest(&b, 0)));
}

/// An output taken over values it differs from everywhere is not poisoned and keeps them;
/// over anything else it is: a block that holds nothing known, the same point, another
/// precision, another length. A simulated arena, given the same arrays, counts the same poison.
#[test]
fn outputs_are_taken_over_values_they_differ_from_everywhere() {
    use roofprobe::backend::host::arena::{overwritable, Need};
    let (pool, arena) = two_workers();
    let n = (8 << 20) / 4; // (half of it still 4 MiB, an arena's size)
    let out = |k| Fill::SweepOut {
        precision: Precision::F32,
        k,
    };
    let f64_out = Fill::SweepOut {
        precision: Precision::F64,
        k: 4,
    };
    assert!(overwritable(out(1), out(4)) && overwritable(out(4), out(1)));
    assert!(!overwritable(out(4), out(4)) && !overwritable(out(1), f64_out));
    let sweep = Fill::Sweep {
        precision: Precision::F32,
    };
    assert!(!overwritable(sweep, out(4)));
    let simulated = Arena::simulated(u64::MAX, true);
    // each array in turn, with the simulated arena beside it: (what it holds when its check
    // passes, its length, whether it is poisoned)
    let steps = [
        (out(1), n, true),        // a new block
        (out(4), n, false),       // over point 1
        (out(4), n, true),        // the same point
        (out(16), n, false),      // over point 4
        (out(64), n / 2, true),   // another length
        (out(256), n / 2, false), // over point 64
        (f64_out, n / 4, true),   // another precision (as many bytes as point 256's 4 MiB / 2)
    ];
    for (at, (holds, len, poisons)) in steps.into_iter().enumerate() {
        let was = arena.written().poisoned_bytes;
        let f64s = holds == f64_out;
        if f64s {
            let mut a = arena.output_over(&pool, len, 16, f64::NAN, holds).unwrap();
            a.fill(at as f64);
            a.holds(Some(holds));
        } else {
            let mut a = arena.output_over(&pool, len, 16, f32::NAN, holds).unwrap();
            if !poisons {
                assert!(
                    a.iter().all(|x| *x == at as f32 - 1.0),
                    "step {at}: the values kept"
                );
            }
            a.fill(at as f32);
            a.holds(Some(holds));
        }
        let poisoned = arena.written().poisoned_bytes - was;
        let bytes = len * if f64s { 8 } else { 4 };
        assert_eq!(
            poisoned,
            if poisons { bytes as u64 } else { 0 },
            "step {at}"
        );
        let need = Need {
            bytes,
            elements: len,
            fill: None,
            holds: Some(holds),
        };
        assert_eq!(
            simulated.simulate(&[need]).poisoned_bytes,
            poisoned,
            "step {at}"
        );
    }
    // an output whose check failed holds nothing known: the next is poisoned
    let mut a = arena.output_over(&pool, n, 16, f32::NAN, out(1)).unwrap();
    a.holds(None);
    drop(a);
    let was = arena.written().poisoned_bytes;
    drop(arena.output_over(&pool, n, 16, f32::NAN, out(4)).unwrap());
    assert_eq!(arena.written().poisoned_bytes - was, 8 << 20);
}

/// Where no idle block is large enough, one grows (on Linux, one NUMA node): one holding nothing
/// first, else the largest. Only the part past its old end is new memory and first-touched,
/// the values written over the whole of it are all there, and a block that was a guarded input
/// is writable again. A simulated arena counts the same new bytes; one of several nodes, and
/// another OS, take a new block instead.
#[test]
fn a_block_too_small_grows_and_only_its_new_part_is_new() {
    use roofprobe::backend::host::arena::Need;
    use roofprobe::backend::host::pages::GROWS;
    const MIB: usize = 1 << 20;
    let (pool, arena) = two_workers();
    let sweep = Fill::Sweep {
        precision: Precision::F32,
    };
    // a guarded input of 8 MiB, and an output of 4 MiB holding nothing
    let input = arena
        .input(&pool, 2 * MIB, 16, sweep, |i| i as f32)
        .unwrap();
    assert!(input.read_only());
    drop((input, arena.output(&pool, MIB, 16, 0.0f32).unwrap()));
    assert_eq!(arena.written().new_bytes, 12 << 20);
    let touched = arena.touch_secs();

    // 10 MiB: the empty 4 MiB block grows, though the 8 MiB one is larger
    let a = arena.output(&pool, 10 * MIB / 4, 16, -1.0f32).unwrap();
    assert!(a.iter().all(|x| *x == -1.0));
    let new = arena.written().new_bytes - (12 << 20);
    assert_eq!(new, if GROWS { 6 << 20 } else { 10 << 20 });
    assert!(arena.touch_secs() > touched);
    // 12 MiB: of the idle blocks only the guarded input is left; it grows, and is writable
    let b = arena
        .input(&pool, 3 * MIB, 16, sweep, |i| -(i as f32))
        .unwrap();
    assert!(b.iter().enumerate().all(|(i, x)| *x == -(i as f32)));
    let held = arena.held_bytes();
    drop((a, b));
    assert_eq!(held, if GROWS { 22 << 20 } else { 34 << 20 });
    let mut c = arena.output(&pool, 12 * MIB / 4, 16, 0.0f32).unwrap();
    assert!(!c.read_only());
    c.fill(2.0);

    for (one_node, grows) in [(true, GROWS), (false, false)] {
        let simulated = Arena::simulated(u64::MAX, one_node);
        let need = |mib: usize, fill| Need {
            bytes: mib * MIB,
            elements: mib * MIB / 4,
            fill,
            holds: None,
        };
        // (as the cases above: the arrays each holds at once)
        let news = [
            simulated
                .simulate(&[need(8, Some(sweep)), need(4, None)])
                .new_bytes,
            simulated
                .simulate(&[need(10, None), need(12, Some(sweep))])
                .new_bytes,
        ];
        let want = if grows { [12, 6 + 4] } else { [12, 10 + 12] };
        assert_eq!(news, want.map(|mib| mib << 20), "one node: {one_node}");
    }
}
