//! The host arena's poison fill: non-temporal stores on x86-64 for the aligned body of a large
//! slice, plain ones for its ends. Whatever the slice's start, length and word size, every
//! element ends up the value, and nothing outside the slice is touched.

use roofprobe::backend::host::arena::{fill_streaming, Word};

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
