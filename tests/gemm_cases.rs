//! The GEMM case catalogue (`roofprobe::cases::gemm`): shapes and their work, the shapes each
//! device plans, the weight copies of decode steps, the operands' values and the checks (exact
//! where the accumulation is, a Frobenius bound where it is not), and the PTX kernels' tiles.

use roofprobe::cases::gemm::*;
use roofprobe::cases::{Case, Precision, Verdict};
use roofprobe::kernels::gemm::{expand, expand_tma};

#[test]
fn shapes_name_themselves_and_parse_back() {
    let s = Shape::new(1, 14336, 4096);
    assert_eq!(s.to_string(), "1x14336x4096");
    assert_eq!("1x14336x4096".parse::<Shape>().unwrap(), s);
    assert!("1x2".parse::<Shape>().unwrap_err().contains("MxNxK"));
    assert!("0x2x3".parse::<Shape>().unwrap_err().contains("positive"));
    assert_eq!(Shape::square(8192).flops(), 2 * 8192u64.pow(3));
}

/// The work is 2MNK operations, A and B read and C written once in their own types.
#[test]
fn work_counts_each_matrix_once_in_its_type() {
    let c = case(GPU_OURS, Precision::Bf16F32, Shape::new(1, 4096, 4096));
    assert_eq!(c.id(), "gemm/ptx/bf16.f32/1x4096x4096");
    assert_eq!(c.work.flops, 2 * 4096 * 4096);
    assert_eq!(c.work.bytes_read, (4096 + 4096 * 4096) * 2);
    assert_eq!(c.work.bytes_written, 4096 * 4);
    // a GEMV moves about one byte per operation in bf16: intensity just under 1
    let i = c.work.intensity().unwrap();
    assert!((0.99..1.0).contains(&i), "{i}");
    let f = case(HOST_OURS, Precision::F64, Shape::square(256));
    assert_eq!(f.work.bytes(), 3 * 256 * 256 * 8);
    assert_eq!(f.working_set_bytes, f.work.bytes());
    assert_eq!(shape_of(&f), Ok(Shape::square(256)));
}

#[test]
fn shapes_are_capped_by_memory_time_and_size() {
    let open = Limits {
        usable_bytes: u64::MAX,
        max_matrix_bytes: None,
        max_flops: f64::INFINITY,
    };
    assert_eq!(square_shapes(Precision::F32, &open).len(), 7);
    assert_eq!(batch_shapes(Precision::F32, &open).len(), 5 * 14);
    // 1 GiB for the three f32 matrices: 8192² f32 is 256 MiB each, 768 MiB in all
    let memory = Limits {
        usable_bytes: 1 << 30,
        ..open
    };
    assert_eq!(
        square_shapes(Precision::F32, &memory).last(),
        Some(&Shape::square(8192))
    );
    // time: 2·2048³ = 1.7e10 fits, 4096³ does not
    let time = Limits {
        max_flops: 2e10,
        ..open
    };
    assert_eq!(
        square_shapes(Precision::F32, &time).last(),
        Some(&Shape::square(2048))
    );
    // a --size of 1 MiB per matrix: 512² f32, and no Llama weight
    let size = Limits {
        max_matrix_bytes: Some(1 << 20),
        ..open
    };
    assert_eq!(square_shapes(Precision::F32, &size).len(), 2);
    assert!(batch_shapes(Precision::F32, &size).is_empty());
    // reference first, then ours, shape by shape
    let ids: Vec<String> = cases(HOST_OURS, Some(HOST_REFERENCE), Precision::F32, &size, true)
        .iter()
        .map(Case::id)
        .collect();
    assert_eq!(
        ids,
        [
            "gemm/gemm-crate/f32/256x256x256",
            "gemm/simd/f32/256x256x256",
            "gemm/gemm-crate/f32/512x512x512",
            "gemm/simd/f32/512x512x512",
        ]
    );
    assert_eq!(reference_of("simd"), Some("gemm-crate"));
    assert_eq!(reference_of("cublas"), None);
    assert_eq!(
        weight_of(Shape::new(64, 28672, 8192)).unwrap().what,
        "Llama 3 70B FFN gate/up projection"
    );
    assert!(weight_of(Shape::new(3, 4096, 4096)).is_none());
}

#[test]
fn gpu_operands_are_padded_aligned_and_checked() {
    assert_eq!(gpu_leading_dimension(Precision::Bf16F32, 1), 8);
    assert_eq!(gpu_leading_dimension(Precision::Bf16F32, 129), 136);
    assert_eq!(gpu_leading_dimension(Precision::E4m3F32, 1), 16);
    assert_eq!(gpu_leading_dimension(Precision::E4m3F32, 129), 144);
    assert_eq!(gpu_blocks(Shape::new(129, 1, 17)), 2);
    assert_eq!(GPU_SHARED_BYTES, 64 << 10);
    let s = Shape::new(3, 2, 5);
    let bf16 = Precision::Bf16F32;
    assert!(check_operands(bf16, s, 8, 8).is_ok());
    assert!(check_operands(bf16, s, 5, 8)
        .unwrap_err()
        .contains("multiple of 8"));
    assert!(check_operands(bf16, s, 8, 0).unwrap_err().contains("ldb"));
    // fp8 rows are 16-byte aligned too: 16 elements
    assert!(check_operands(Precision::E4m3F32, s, 8, 16)
        .unwrap_err()
        .contains("multiple of 16"));
    assert!(check_operands(Precision::E4m3F32, s, 16, 16).is_ok());
    // word 0 of A: elements (0,0) and (0,1); the padding past K reads as zero
    let w = operand_word(Precision::Bf16F32, s, 0, 8, 0);
    let lo = roofprobe::cases::arith::bf16_value(w as u16);
    assert_eq!(lo as i64, input(0, 0));
    assert_eq!(
        operand_word(Precision::F16F32, s, 1, 8, 3) >> 16,
        0,
        "column 7 > K"
    );
    assert!(expand(Precision::F16F32).contains(".visible .entry gemm_f16_f32("));
    // e4m3: four elements a word, the lowest address lowest; ±1 … ±4 exact
    let e4m3 = Precision::E4m3F32;
    assert_eq!(operand_words(e4m3, 3, 16), 12);
    let w = operand_word(e4m3, s, 0, 16, 1);
    for j in 0..4 {
        let bits = (w >> (8 * j)) as u8;
        let want = if 4 + j < s.k {
            input_bits8(e4m3, input(0, 4 + j))
        } else {
            0
        };
        assert_eq!(bits, want, "element {}", 4 + j);
    }
    assert_eq!(
        [1, 2, 3, 4, -1, -4].map(|v| input_bits8(e4m3, v)),
        [0x38, 0x40, 0x44, 0x48, 0xB8, 0xC8]
    );
    // fp8's accumulation is held to 14 bits: exact while 16·K < 2^14
    assert!(exact_accumulation(e4m3, 1023));
    assert!(!exact_accumulation(e4m3, 1024));
    assert!(exact_accumulation(Precision::Bf16F32, 1024));
    assert!(frobenius_tolerance(e4m3, 1024) > frobenius_tolerance(bf16, 1024));
    // the TMA kernel's K tile is 128 bytes: 64 bf16, 128 e4m3
    assert_eq!((tma_tile_k(bf16), tma_tile_k(e4m3)), (64, 128));
    assert_eq!(tma_box(e4m3, 1, false), [128, 256]);
    assert_eq!(tma_box(bf16, 1, true), [64, 128]);
    let fp8 = expand_tma(e4m3, false);
    assert!(fp8.contains("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3"));
    assert!(fp8.contains("shl.b32 %r38, %r29, 7;"));
    assert!(expand_tma(bf16, false).contains("shl.b32 %r38, %r29, 6;"));
    // the cluster expansion: its own entry, clusters of two, every placeholder filled, the
    // empty barriers taking 16 arrivals (256 alone), and whole clusters of CTAs: 3 row tiles
    // take 2 clusters (a CTA past M), 2 column tiles twice that
    for p in TMA_PRECISIONS {
        for cluster in [false, true] {
            let text = expand_tma(p, cluster);
            let placeholder = text
                .split('@')
                .skip(1)
                .any(|t| t.starts_with(|c: char| c.is_ascii_uppercase()));
            assert!(!placeholder, "{p} (cluster {cluster}): a placeholder left");
            assert!(text.contains(&format!(".visible .entry {}(", tma_entry_name(p, cluster))));
            assert_eq!(
                text.contains("\n.reqnctapercluster 2, 1, 1\n"),
                cluster,
                "{p}"
            );
            let releases = if cluster { "], 16;" } else { "], 256;" };
            assert_eq!(text.matches(releases).count(), 4, "{p}");
        }
    }
    assert_eq!(tma_entry_name(bf16, true), "gemm_tma_cluster2_bf16_f32");
    let three_by_two = Shape::new(257, 300, 64);
    assert_eq!(tma_blocks(three_by_two, false), 3 * 2);
    assert_eq!(tma_blocks(three_by_two, true), 4 * 2);
    assert_eq!(
        (tma_kernel("tma"), tma_kernel("tma-cluster")),
        (Some(false), Some(true))
    );
    assert_eq!(tma_kernel("wgmma"), None);
    assert_eq!(reference_of(GPU_TMA_CLUSTER), Some(GPU_REFERENCE));
    // tf32: one f32 per word, exact; the padding is zero
    assert_eq!(operand_words(Precision::Tf32F32, 3, 8), 24);
    assert_eq!(operand_words(Precision::Bf16F32, 3, 8), 12);
    let w = operand_word(Precision::Tf32F32, s, 1, 8, 9);
    assert_eq!(f32::from_bits(w as u32) as i64, input(1, 5 + 1));
    assert_eq!(
        operand_word(Precision::Tf32F32, s, 1, 8, 13),
        0,
        "column 5 = K"
    );
    assert_eq!(
        (
            gpu_tile_k(Precision::Bf16F32),
            gpu_tile_k(Precision::Tf32F32)
        ),
        (32, 16)
    );
    // the SIMT kernel: f32 in memory like tf32, K tiles of 8, its shared memory static
    assert_eq!(
        operand_word(SIMT_PRECISION, s, 1, 8, 9),
        operand_word(Precision::Tf32F32, s, 1, 8, 9)
    );
    assert_eq!(operand_words(SIMT_PRECISION, 3, 8), 24);
    assert_eq!(gpu_tile_k(SIMT_PRECISION), 8);
    assert_eq!(entry_name(SIMT_PRECISION), "gemm_f32_f32");
    assert_eq!(SIMT_SHARED_BYTES, 16896);
    assert_eq!(
        (
            gpu_dynamic_shared_bytes(SIMT_PRECISION),
            gpu_dynamic_shared_bytes(Precision::Tf32F32)
        ),
        (0, 64 << 10)
    );
    assert!(roofprobe::kernels::GEMM_SIMT.contains(&format!(
        ".shared .align 16 .b8 gemm_f32_f32_smem[{SIMT_SHARED_BYTES}]"
    )));
    assert!(std::panic::catch_unwind(|| expand(SIMT_PRECISION)).is_err());
    for p in TENSOR_PRECISIONS {
        let text = expand(p);
        let placeholder = text
            .split('@')
            .skip(1)
            .any(|t| t.starts_with(|c: char| c.is_ascii_uppercase()));
        assert!(!placeholder, "{p}: a placeholder left");
    }
    let text = expand(Precision::Bf16F32);
    assert!(!text.contains("cvt.rna.tf32.f32 %") && text.contains("m16n8k16.row.col.f32.bf16"));
    let text = expand(Precision::Tf32F32);
    assert!(text.contains(".visible .entry gemm_tf32_f32("));
    assert_eq!(text.matches("cvt.rna.tf32.f32 %").count(), 2 * 24);
    assert_eq!(
        text.matches("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
            .count(),
        32
    );
}

/// Decode-step shapes smaller than the DRAM rule get copies of B up to it, as far as
/// memory allows; larger M, and shapes already that large, keep one copy.
#[test]
fn small_m_cases_rotate_copies_of_b_up_to_the_dram_rule() {
    let decode = Shape::new(1, 4096, 4096); // B: 64 MiB in f32
    let batch = Shape::new(64, 4096, 4096);
    let big = Shape::new(1, 28672, 8192); // B: 896 MiB
    let mut cases = [
        case(HOST_OURS, Precision::F32, decode),
        case(HOST_OURS, Precision::F32, batch),
        case(HOST_OURS, Precision::F32, big),
    ];
    rotate_weights(&mut cases, 16, 512 << 20, u64::MAX);
    let weight = weight_bytes(Precision::F32, decode);
    let others = matrix_bytes(Precision::F32, decode) - weight;
    assert_eq!(weight_copies(&cases[0]), 8); // 8 × 64 MiB + A and C ≥ 512 MiB
    assert_eq!(cases[0].working_set_bytes, others + 8 * weight);
    assert!(cases[0].working_set_bytes >= 512 << 20);
    assert_eq!(weight_copies(&cases[1]), 1);
    assert_eq!(
        cases[1].working_set_bytes,
        matrix_bytes(Precision::F32, batch)
    );
    assert_eq!(weight_copies(&cases[2]), 1);
    // memory for 3 copies only
    let mut capped = [case(HOST_REFERENCE, Precision::F32, decode)];
    rotate_weights(&mut capped, 16, 512 << 20, others + 3 * weight + 5);
    assert_eq!(weight_copies(&capped[0]), 3);
    // a square is a compute point, whatever its size: one B
    let mut square = [case(HOST_OURS, Precision::F32, Shape::square(256))];
    rotate_weights(&mut square, u64::MAX, 512 << 20, u64::MAX);
    assert_eq!(weight_copies(&square[0]), 1);
    // other families are never touched
    let mut stream = [roofprobe::cases::stream::cases(|_| 1 << 20).remove(0)];
    let before = stream[0].working_set_bytes;
    rotate_weights(&mut stream, 16, 512 << 20, u64::MAX);
    assert_eq!(
        (stream[0].working_set_bytes, weight_copies(&stream[0])),
        (before, 1)
    );
}

#[test]
fn inputs_are_small_non_zero_integers_and_exact() {
    let v: Vec<i64> = (0..10_000).map(|i| input(0, i)).collect();
    assert!(v.iter().all(|&x| x != 0 && x.abs() <= MAX_INPUT));
    for x in -4..=4 {
        assert!(v.contains(&x) || x == 0, "{x} never drawn");
    }
    assert_ne!(input(0, 5), input(1, 5) + 100); // distinct streams exist
    assert!(exact_accumulation(Precision::Bf16F32, 16384));
    assert!(exact_accumulation(Precision::F32, (1 << 20) - 1));
    assert!(!exact_accumulation(Precision::F32, 1 << 20));
    assert!(!exact_accumulation(Precision::F16F16, 256));
}

/// C computed exactly, as f64 values.
fn product(shape: Shape) -> Vec<f64> {
    let mut c = vec![0.0; (shape.m * shape.n) as usize];
    for i in 0..shape.m {
        for j in 0..shape.n {
            c[(i * shape.n + j) as usize] = exact_element(
                shape,
                &|i, k| a_value(shape, i, k),
                &|n, k| b_value(shape, n, k),
                i,
                j,
            ) as f64;
        }
    }
    c
}

fn verdict(p: Precision, shape: Shape, c: &[f64]) -> Verdict {
    check(
        p,
        shape,
        |i, k| a_value(shape, i, k),
        |n, k| b_value(shape, n, k),
        |i, j| c[(i * shape.n + j) as usize],
    )
}

/// The exact product passes; one element off by one, a NaN left by an unwritten tile, and
/// a transposed C fail, naming the element where they can.
#[test]
fn the_check_demands_the_exact_product() {
    for shape in [
        Shape::new(1, 17, 129),
        Shape::new(17, 1, 33),
        Shape::new(33, 29, 7),
    ] {
        let good = product(shape);
        assert!(verdict(Precision::F32, shape, &good).valid, "{shape}");
        let mut off = good.clone();
        let last = off.len() - 1;
        off[last] += 1.0;
        let v = verdict(Precision::F32, shape, &off);
        assert!(!v.valid, "{shape}");
        let (i, j) = (shape.m - 1, shape.n - 1);
        assert!(
            v.detail
                .contains(&format!("C[{i}][{j}] is {}", off[last] as i64))
                && v.detail.contains("diff 1"),
            "{shape}: {}",
            v.detail
        );
        let mut nan = good.clone();
        nan[0] = f64::NAN;
        let v = verdict(Precision::Bf16F32, shape, &nan);
        assert!(
            !v.valid && v.detail.contains("C[0][0] is NaN"),
            "{}",
            v.detail
        );
    }
    let shape = Shape::new(9, 9, 40);
    let good = product(shape);
    let transposed: Vec<f64> = (0..81).map(|x| good[(x % 9) * 9 + x / 9]).collect();
    assert!(!verdict(Precision::F32, shape, &transposed).valid);
    // two errors that cancel in one row are still seen by the columns
    let mut pair = good.clone();
    pair[0] += 2.0 * weight(0, 1) as f64;
    pair[1] -= 2.0 * weight(0, 0) as f64;
    assert!(!verdict(Precision::F32, shape, &pair).valid);
    // an integer no product of these inputs can be (past 16·K), named before any sum takes it
    for huge in [16.0 * 40.0 + 1.0, 2f64.powi(62)] {
        let mut far = good.clone();
        far[10] = huge;
        let v = verdict(Precision::F32, shape, &far);
        assert!(
            !v.valid
                && v.detail
                    .contains("1 of 81 elements of C are not the integers"),
            "{huge}: {}",
            v.detail
        );
    }
    // an input that is none (past ±4: a kernel wrote over A or B) fails, whatever C holds
    // (one far past them too: its products overflow 64 bits and wrap, without a panic)
    for (side, value, want) in [
        (0, -5, "1 of 360 elements of A"),
        (1, 5, "1 of 360 of B"),
        (1, i64::MAX, "1 of 360 of B"),
    ] {
        let v = check(
            Precision::F32,
            shape,
            |i, k| match (side, i * 40 + k) {
                (0, 7) => value,
                _ => a_value(shape, i, k),
            },
            |n, k| match (side, n * 40 + k) {
                (1, 7) => value,
                _ => b_value(shape, n, k),
            },
            |i, j| good[(i * 9 + j) as usize],
        );
        assert!(!v.valid && v.detail.contains(want), "{}", v.detail);
    }
}

/// Where the accumulation is not exact, a relative Frobenius error within the type's
/// tolerance passes and one above it fails.
#[test]
fn inexact_accumulation_is_held_to_a_frobenius_tolerance() {
    let shape = Shape::new(20, 20, 300);
    assert!(!exact_accumulation(Precision::F16F16, shape.k));
    let good = product(shape);
    let tol = frobenius_tolerance(Precision::F16F16, shape.k);
    let nudged: Vec<f64> = good.iter().map(|v| v * (1.0 + tol / 4.0)).collect();
    assert!(verdict(Precision::F16F16, shape, &nudged).valid);
    let wrong: Vec<f64> = good.iter().map(|v| v * (1.0 + tol * 4.0)).collect();
    let v = verdict(Precision::F16F16, shape, &wrong);
    assert!(
        !v.valid && v.detail.contains("relative Frobenius error"),
        "{}",
        v.detail
    );
    assert_eq!(spread(100, 4), [0, 33, 66, 99]);
    assert_eq!(spread(3, 16), [0, 1, 2]);
}
