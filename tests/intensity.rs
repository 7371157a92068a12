//! The arithmetic-intensity cases (cases::intensity): the work table's intensities, the inputs
//! and their gold values (from the word or its index, tabled or iterated), the check finding an
//! off-by-one K, the GPU's shares of the words, the threads' trip counts, and the PTX expansion
//! unrolling K FMAs per word.

use roofprobe::cases::arith;
use roofprobe::cases::intensity::*;
use roofprobe::cases::Precision;
use roofprobe::kernels::intensity::{expand, fma_instruction};

#[test]
fn work_table_gives_the_documented_intensities() {
    let n = 1000;
    for (p, per_k) in [
        (Precision::F32, 0.25),
        (Precision::I32, 0.25),
        (Precision::F16x2, 0.5),
        (Precision::Bf16x2, 0.5),
        (Precision::F64, 0.125),
    ] {
        assert_eq!(case(p, 0, n).work.intensity(), Some(0.0));
        assert_eq!(case(p, 64, n).work.intensity(), Some(64.0 * per_k));
        assert_eq!(case(p, 64, n).id(), format!("intensity/fma/{p}/64"));
    }
    let c = case(Precision::F64, 8, n);
    assert_eq!((c.work.bytes(), c.working_set_bytes), (16 * n, 16 * n));
    assert_eq!(cases(&PRECISIONS, |_| 10).len(), 60);
}

#[test]
fn inputs_are_exact_and_varied() {
    for p in PRECISIONS {
        let words: Vec<u64> = (0..2000).map(|i| input(p, i)).collect();
        let mut distinct_words = words.clone();
        distinct_words.sort();
        distinct_words.dedup();
        assert!(distinct_words.len() > 100, "{p}: {}", distinct_words.len());
    }
    // f32 inputs are the f64 inputs' values
    for i in 0..100 {
        let f = f32::from_bits(input(Precision::F32, i) as u32);
        assert!((1.0..2.0).contains(&f));
    }
}

/// The gold value from an input word read back is the one from the word's index, for every
/// precision and several k; a word no input draws has none.
#[test]
fn gold_from_the_input_word_equals_gold_from_its_index() {
    for p in PRECISIONS {
        for k in [0u32, 1, 7, 1024] {
            let gold = Gold::new(p, k);
            for i in (0..3000).step_by(11) {
                assert_eq!(
                    gold.expected_for(input(p, i)),
                    Some(gold.expected(i)),
                    "{p} k={k} word {i}"
                );
            }
        }
        if p != Precision::I32 {
            // 0.5 is below every input (1 + m / d)
            let half = match p {
                Precision::F64 => 0.5f64.to_bits(),
                Precision::F32 => u64::from(0.5f32.to_bits()),
                Precision::F16x2 => arith::pack2(arith::f16_bits(0.5), arith::f16_bits(1.0)),
                _ => arith::pack2(arith::bf16_bits(1.0), arith::bf16_bits(0.5)),
            };
            assert_eq!(Gold::new(p, 3).expected_for(half), None, "{p}");
        }
    }
    // words between the inputs, at 2 and above, or not numbers, are none (f32 and f64 are
    // read by their bits)
    let gold = Gold::new(Precision::F32, 3);
    for x in [
        1.0 + 2f32.powi(-23),
        1.0 + 2f32.powi(-13),
        2.0,
        3.5,
        f32::NAN,
        -1.0,
    ] {
        assert_eq!(gold.expected_for(u64::from(x.to_bits())), None, "{x}");
    }
    let gold = Gold::new(Precision::F64, 3);
    for x in [
        1.0 + 2f64.powi(-52),
        1.0 + 2f64.powi(-13),
        2.0,
        f64::NAN,
        -1.5,
    ] {
        assert_eq!(gold.expected_for(x.to_bits()), None, "{x}");
    }
}

/// The table gives what iterating each word does, for every precision and several k.
#[test]
fn gold_table_equals_direct_iteration() {
    for p in PRECISIONS {
        for k in [0u32, 1, 5, 64] {
            let gold = Gold::new(p, k);
            for i in (0..5000).step_by(7) {
                assert_eq!(
                    gold.expected(i),
                    expected_word(p, k, input(p, i)),
                    "{p} k={k} word {i}"
                );
            }
        }
        // k = 0 is a copy
        assert_eq!(Gold::new(p, 0).expected(3), input(p, 3));
    }
}

#[test]
fn check_finds_an_off_by_one_k() {
    let p = Precision::Bf16x2;
    let good = |i: usize| expected_word(p, 16, input(p, i as u64));
    assert!(check(p, 16, 300, good).valid);
    let v = check(p, 16, 300, |i| {
        if i == 200 {
            expected_word(p, 15, input(p, 200))
        } else {
            good(i)
        }
    });
    assert!(!v.valid, "15 FMAs instead of 16 must show");
    assert!(v.detail.contains("[200]"), "{}", v.detail);
}

/// The threads' shares cover every word once, whatever n, grid and block.
#[test]
fn gpu_shares_cover_every_word_once() {
    for p in [Precision::F32, Precision::F64] {
        for n in [0u64, 1, 3, 5, 17, 257, 4099, 10_007] {
            for (grid, block) in [(1u64, 32u64), (3, 64), (2, 256)] {
                let threads = grid * block;
                let mut owner = vec![0u32; n as usize];
                let width = words_per_vector(p);
                for t in 0..threads {
                    let mut v = t;
                    while v < n / width {
                        (v * width..(v + 1) * width).for_each(|w| owner[w as usize] += 1);
                        v += threads;
                    }
                    let mut w = n / width * width + t;
                    while w < n {
                        owner[w as usize] += 1;
                        w += threads;
                    }
                }
                assert!(owner.iter().all(|&c| c == 1), "{p} n={n}");
                let blocks: u64 = (0..grid)
                    .map(|b| gpu_block_words(p, n, threads, block, b))
                    .sum();
                assert_eq!(blocks, n, "{p} n={n} grid={grid}");
            }
        }
    }
    // f32, 4099 words over 2 x 256 threads: 1024 vectors, 3 tail words; thread 0 has vectors
    // 0 and 512 and tail word 4096
    assert_eq!(gpu_thread_words(Precision::F32, 4099, 512, 0), 9);
    assert_eq!(gpu_thread_words(Precision::F32, 4099, 512, 3), 8);
    assert_eq!(gpu_block_words(Precision::F32, 4099, 512, 256, 1), 256 * 8);
}

/// The trips and steps of a thread are the kernel's loops followed one trip at a time.
#[test]
fn thread_trips_follow_the_kernels_loops() {
    for p in [Precision::F32, Precision::F64] {
        let width = words_per_vector(p);
        for n in [0u64, 1, 3, 5, 8, 17, 257, 4099, 10_007] {
            for threads in [1u64, 3, 32, 96, 512] {
                for t in 0..threads {
                    let vectors = n / width;
                    let (mut trips, mut v) = (0, t);
                    while v + threads < vectors {
                        (trips, v) = (trips + 1, v + 2 * threads);
                    }
                    while v < vectors {
                        (trips, v) = (trips + 1, v + threads);
                    }
                    let mut w = vectors * width + t;
                    while w < n {
                        (trips, w) = (trips + 1, w + threads);
                    }
                    assert_eq!(
                        gpu_thread_trips(p, n, threads, t),
                        trips,
                        "{p} n={n} T={threads} t={t}"
                    );
                    assert_eq!(gpu_thread_steps(p, 1024, n, threads, t), 1024 * trips);
                }
            }
        }
    }
    // the steps are a 32-bit count
    let trips = gpu_thread_trips(Precision::F32, 1 << 36, 1, 0);
    assert_eq!(trips, (1 << 34) - (1 << 33));
    assert_eq!(gpu_thread_steps(Precision::F32, 1024, 1 << 36, 1, 0), 0);
}

#[test]
fn expansion_unrolls_k_fmas_per_word() {
    for p in PRECISIONS {
        for k in [0u32, 1, 3, 64, 65, 128, 130, 1024] {
            let ptx = expand(p, k);
            let unexpanded = ptx.split('@').skip(1).step_by(2).any(|w| {
                !w.is_empty()
                    && w.chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            });
            assert!(!unexpanded, "unexpanded placeholder in {p} k={k}");
            let fmas = ptx
                .lines()
                .filter(|l| l.trim_start().starts_with(fma_instruction(p)))
                .count();
            let vec = if p == Precision::F64 { 2 } else { 4 };
            // a block of 64 steps in a loop above 64, and the steps left over
            let (looped, unrolled) = match k {
                0..=64 => (0, k),
                _ => (k / 64 * 64, 64 + k % 64),
            };
            // main (2 vectors) + remainder (1 vector) + tail (1 word)
            assert_eq!(fmas, unrolled as usize * (3 * vec + 1), "{p} k={k}");
            let loops = ptx.matches("_steps;").count();
            assert_eq!(loops, if looped > 0 { 3 } else { 0 }, "{p} k={k}");
            if looped > 0 {
                assert_eq!(
                    ptx.matches(&format!("add.u32 %r13, %r12, {looped};"))
                        .count(),
                    3,
                    "{p} k={k}"
                );
            }
            // every loop trip counts k steps
            let counted: u32 = ptx
                .lines()
                .filter_map(|l| l.trim_start().strip_prefix("add.u32 %r12, %r12, "))
                .map(|v| v.trim_end_matches(';').parse::<u32>().unwrap())
                .sum();
            let per_loop = if looped > 0 { 64 + k % 64 } else { k };
            assert_eq!(counted, 3 * per_loop, "{p} k={k}");
            assert!(ptx.contains(&format!(".visible .entry {}(", entry_name(p, k))));
        }
    }
    assert!(expand(Precision::F64, 2).contains("ld.global.v2.b64 {%x0, %x1}"));
    assert!(expand(Precision::I32, 2).contains("mad.lo.s32 %x7, %x7, %xa, %xb;"));
}
