//! Tensor-core fragment coordinates held against a fixed, outside table: CUTLASS's CuTe layouts
//! of the same `mma.sync` and `ldmatrix` forms, transcribed as numbers (shape and stride of
//! each (thread, value) → matrix-offset layout) from `include/cute/atom/mma_traits_sm80.hpp`,
//! `mma_traits_sm89.hpp`, `mma_traits_sm90.hpp` and `copy_traits_sm75.hpp`.
//!
//! The interpreter (`ptxsim::mma`) and the host (`roofprobe::cases::tensor`, which places the
//! tensor cases' inputs in registers) each compute the layouts from the PTX ISA's formulas; the
//! kernel tests compare one with the other, so a permutation both shared would pass them. This
//! table is a third source, written down apart from both and in another form (CuTe's
//! hierarchical shapes and strides rather than groupID/threadID formulas): both must agree with
//! it for every lane and every element.
//!
//! CuTe conventions: a layout maps a (thread, value) pair to an offset in the matrix, each
//! index split over its modes first mode fastest, offset = Σ coordinate × stride. A's matrix
//! is M×K and B's N×K (`_TN`: both K-major), C's M×N, each column-major (offset m + M·k,
//! n + N·k, m + M·n). CuTe's value index is the element index of the PTX fragment (element
//! `i` in register `i / per_register`, low bits first). For `ldmatrix` the layouts map to bit
//! offsets in the 8×8 matrix of 16-bit elements stored row after row.

use ptxsim::mma::{ldmatrix_source, Layout};
use ptxsim::Ty;
use roofprobe::cases::{tensor, Precision};

/// One layout: its thread modes and value modes, each (size, stride).
#[derive(Clone, Copy, Debug)]
struct Cute {
    thr: &'static [(usize, usize)],
    val: &'static [(usize, usize)],
}

impl Cute {
    fn offset(&self, thread: usize, value: usize) -> usize {
        fn eval(modes: &[(usize, usize)], index: usize) -> usize {
            let mut rest = index;
            let mut off = 0;
            for &(size, stride) in modes {
                off += rest % size * stride;
                rest /= size;
            }
            assert_eq!(rest, 0, "index {index} is past the modes {modes:?}");
            off
        }
        eval(self.thr, thread) + eval(self.val, value)
    }

    fn values(&self) -> usize {
        self.val.iter().map(|m| m.0).product()
    }
}

/// The (4, 8) thread shape every warp-wide mma has, with its strides.
const fn thr(s0: usize, s1: usize) -> [(usize, usize); 2] {
    [(4, s0), (8, s1)]
}

// From mma_traits_sm80.hpp's helper layouts.
/// SM80_8x4: ((4,8),1):((8,1),0).
const SM80_8X4: Cute = Cute {
    thr: &thr(8, 1),
    val: &[(1, 0)],
};
/// SM80_8x8_Row: ((4,8),2):((16,1),8).
const SM80_8X8_ROW: Cute = Cute {
    thr: &thr(16, 1),
    val: &[(2, 8)],
};
/// SM80_8x16_Row: ((4,8),4):((32,1),8).
const SM80_8X16_ROW: Cute = Cute {
    thr: &thr(32, 1),
    val: &[(4, 8)],
};
/// SM80_16x8_Row: ((4,8),(2,2)):((32,1),(16,8)).
const SM80_16X8_ROW: Cute = Cute {
    thr: &thr(32, 1),
    val: &[(2, 16), (2, 8)],
};

/// One mma atom: its shape (M, N, K) and A, B, C layouts, with the CuTe trait it comes from.
#[derive(Clone, Copy, Debug)]
struct Atom {
    trait_name: &'static str,
    mnk: (usize, usize, usize),
    a: Cute,
    b: Cute,
    c: Cute,
}

/// SM80_16x8x8_F16F16F16F16_TN (also the F32 and BF16 variants).
const M16N8K8_16BIT: Atom = Atom {
    trait_name: "SM80_16x8x8_F16F16F16F16_TN",
    mnk: (16, 8, 8),
    a: SM80_16X8_ROW,
    b: SM80_8X8_ROW,
    c: SM80_16X8_ROW,
};
/// SM80_16x8x16_F16F16F16F16_TN (also the F32 and BF16 variants).
const M16N8K16_16BIT: Atom = Atom {
    trait_name: "SM80_16x8x16_F16F16F16F16_TN",
    mnk: (16, 8, 16),
    a: Cute {
        thr: &thr(32, 1),
        val: &[(2, 16), (2, 8), (2, 128)],
    },
    b: Cute {
        thr: &thr(16, 1),
        val: &[(2, 8), (2, 64)],
    },
    c: SM80_16X8_ROW,
};
/// SM80_16x8x4_F32TF32TF32F32_TN.
const M16N8K4_TF32: Atom = Atom {
    trait_name: "SM80_16x8x4_F32TF32TF32F32_TN",
    mnk: (16, 8, 4),
    a: Cute {
        thr: &thr(16, 1),
        val: &[(2, 8)],
    },
    b: SM80_8X4,
    c: SM80_16X8_ROW,
};
/// SM80_16x8x8_F32TF32TF32F32_TN.
const M16N8K8_TF32: Atom = Atom {
    trait_name: "SM80_16x8x8_F32TF32TF32F32_TN",
    mnk: (16, 8, 8),
    a: Cute {
        thr: &thr(16, 1),
        val: &[(2, 8), (2, 64)],
    },
    b: Cute {
        thr: &thr(8, 1),
        val: &[(2, 32)],
    },
    c: SM80_16X8_ROW,
};
/// SM80_8x8x4_F64F64F64F64_TN.
const M8N8K4_F64: Atom = Atom {
    trait_name: "SM80_8x8x4_F64F64F64F64_TN",
    mnk: (8, 8, 4),
    a: SM80_8X4,
    b: SM80_8X4,
    c: SM80_8X8_ROW,
};
/// SM90_16x8x4_F64F64F64F64_TN.
const M16N8K4_F64: Atom = Atom {
    trait_name: "SM90_16x8x4_F64F64F64F64_TN",
    mnk: (16, 8, 4),
    a: Cute {
        thr: &thr(16, 1),
        val: &[(2, 8)],
    },
    b: SM80_8X4,
    c: SM80_16X8_ROW,
};
/// SM90_16x8x16_F64F64F64F64_TN (Hopper's f64 tensor row): A ((4,8),(2,4)):((16,1),(8,64)),
/// B ((4,8),4):((8,1),32).
const M16N8K16_F64: Atom = Atom {
    trait_name: "SM90_16x8x16_F64F64F64F64_TN",
    mnk: (16, 8, 16),
    a: Cute {
        thr: &thr(16, 1),
        val: &[(2, 8), (4, 64)],
    },
    b: Cute {
        thr: &thr(8, 1),
        val: &[(4, 32)],
    },
    c: SM80_16X8_ROW,
};
/// SM80_16x8x16_S32S8S8S32_TN (and the u8 variants). The PTX ISA gives `mma.m16n8k16` with
/// .e4m3/.e5m2 the same 8-bit layout; CuTe has no atom of its own for that form.
const M16N8K16_8BIT: Atom = Atom {
    trait_name: "SM80_16x8x16_S32S8S8S32_TN",
    mnk: (16, 8, 16),
    a: Cute {
        thr: &thr(64, 1),
        val: &[(4, 16), (2, 8)],
    },
    b: SM80_8X16_ROW,
    c: SM80_16X8_ROW,
};
/// SM80_16x8x32_S32S8S8S32_TN (and u8), SM89_16x8x32_F32E4M3E4M3F32_TN (and e5m2): one layout.
const M16N8K32_8BIT: Atom = Atom {
    trait_name: "SM80_16x8x32_S32S8S8S32_TN / SM89_16x8x32_F32E4M3E4M3F32_TN",
    mnk: (16, 8, 32),
    a: Cute {
        thr: &thr(64, 1),
        val: &[(4, 16), (2, 8), (2, 256)],
    },
    b: Cute {
        thr: &thr(32, 1),
        val: &[(4, 8), (2, 128)],
    },
    c: SM80_16X8_ROW,
};

/// Matrix coordinates from CuTe offsets: A (row m, col k), B (row k, col n), C (row m, col n).
fn a_rc(atom: &Atom, lane: usize, i: usize) -> (usize, usize) {
    let (m, _, _) = atom.mnk;
    let off = atom.a.offset(lane, i);
    (off % m, off / m)
}

fn b_rc(atom: &Atom, lane: usize, i: usize) -> (usize, usize) {
    let (_, n, _) = atom.mnk;
    let off = atom.b.offset(lane, i);
    (off / n, off % n)
}

fn c_rc(atom: &Atom, lane: usize, i: usize) -> (usize, usize) {
    let (m, _, _) = atom.mnk;
    let off = atom.c.offset(lane, i);
    (off % m, off / m)
}

/// (lane, element) → (row, col), as the implementation under test gives it.
type Coords<'a> = &'a dyn Fn(usize, usize) -> (usize, usize);
/// (atom, lane, element) → (row, col), as CuTe's table gives it.
type CuteCoords = fn(&Atom, usize, usize) -> (usize, usize);

/// Every (lane, element) of every fragment of `atom` against `got_*`; returns the mismatches.
fn compare(
    what: &str,
    atom: &Atom,
    got_a: impl Fn(usize, usize) -> (usize, usize),
    got_b: impl Fn(usize, usize) -> (usize, usize),
    got_c: impl Fn(usize, usize) -> (usize, usize),
) -> Vec<String> {
    let mut bad = Vec::new();
    let checks: [(&str, &Cute, Coords, CuteCoords); 3] = [
        ("A", &atom.a, &got_a, a_rc),
        ("B", &atom.b, &got_b, b_rc),
        ("C", &atom.c, &got_c, c_rc),
    ];
    for (name, layout, got, want) in checks {
        for lane in 0..32 {
            for i in 0..layout.values() {
                let (w, g) = (want(atom, lane, i), got(lane, i));
                if w != g {
                    bad.push(format!(
                        "{what} {name}: lane {lane} element {i} is {g:?}, CuTe's {} says {w:?}",
                        atom.trait_name
                    ));
                }
            }
        }
    }
    bad
}

/// The CuTe table itself is a bijection (each matrix element held once), so a typo in it
/// cannot pass by mapping two elements to one place.
#[test]
fn the_cute_table_covers_every_element_once() {
    for atom in [
        M16N8K8_16BIT,
        M16N8K16_16BIT,
        M16N8K4_TF32,
        M16N8K8_TF32,
        M8N8K4_F64,
        M16N8K4_F64,
        M16N8K16_F64,
        M16N8K16_8BIT,
        M16N8K32_8BIT,
    ] {
        let (m, n, k) = atom.mnk;
        for (name, layout, size) in [
            ("A", atom.a, m * k),
            ("B", atom.b, n * k),
            ("C", atom.c, m * n),
        ] {
            let mut seen = vec![0; size];
            for lane in 0..32 {
                for i in 0..layout.values() {
                    seen[layout.offset(lane, i)] += 1;
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "{} {name}", atom.trait_name);
        }
    }
}

#[test]
fn the_interpreters_fragment_layouts_match_cute() {
    use ptxsim::MmaShape::*;
    // (shape, A/B type, C/D type, atom)
    let forms = [
        (M8n8k4, Ty::F64, Ty::F64, M8N8K4_F64),
        (M16n8k4, Ty::Tf32, Ty::F32, M16N8K4_TF32),
        (M16n8k4, Ty::F64, Ty::F64, M16N8K4_F64),
        // SM90_16x8x8_F64F64F64F64_TN has the tf32 atom's layouts:
        // A ((4,8),(2,2)):((16,1),(8,64)), B ((4,8),2):((8,1),32)
        (M16n8k8, Ty::F64, Ty::F64, M16N8K8_TF32),
        (M16n8k16, Ty::F64, Ty::F64, M16N8K16_F64),
        (M16n8k8, Ty::F16, Ty::F16, M16N8K8_16BIT),
        (M16n8k8, Ty::F16, Ty::F32, M16N8K8_16BIT),
        (M16n8k8, Ty::Bf16, Ty::F32, M16N8K8_16BIT),
        (M16n8k8, Ty::Tf32, Ty::F32, M16N8K8_TF32),
        (M16n8k16, Ty::F16, Ty::F16, M16N8K16_16BIT),
        (M16n8k16, Ty::F16, Ty::F32, M16N8K16_16BIT),
        (M16n8k16, Ty::Bf16, Ty::F32, M16N8K16_16BIT),
        (M16n8k16, Ty::S8, Ty::S32, M16N8K16_8BIT),
        (M16n8k16, Ty::U8, Ty::S32, M16N8K16_8BIT),
        (M16n8k16, Ty::E4m3, Ty::F32, M16N8K16_8BIT),
        (M16n8k32, Ty::S8, Ty::S32, M16N8K32_8BIT),
        (M16n8k32, Ty::U8, Ty::S32, M16N8K32_8BIT),
        (M16n8k32, Ty::E4m3, Ty::F32, M16N8K32_8BIT),
        (M16n8k32, Ty::E5m2, Ty::F16, M16N8K32_8BIT),
    ];
    let mut bad = Vec::new();
    for (shape, ab, cd, atom) in forms {
        let layout = Layout::new(shape, ab, ab, cd, cd)
            .unwrap_or_else(|| panic!("ptxsim runs {shape:?} {ab:?} {cd:?}"));
        let (na, nb, nc) = layout.elements();
        assert_eq!(
            (na, nb, nc),
            (atom.a.values(), atom.b.values(), atom.c.values()),
            "{shape:?} {ab:?}: elements per lane"
        );
        bad.extend(compare(
            &format!("ptxsim {shape:?} {ab:?}/{cd:?}"),
            &atom,
            |l, i| layout.a_coord(l, i),
            |l, i| layout.b_coord(l, i),
            |l, i| layout.c_coord(l, i),
        ));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_hosts_fragment_layouts_match_cute() {
    let mut bad = Vec::new();
    for p in tensor::forms() {
        let atom = match p.precision {
            _ if p == tensor::HOPPER_F64 => M16N8K16_F64,
            Precision::F16F16 | Precision::F16F32 | Precision::Bf16F32 => M16N8K16_16BIT,
            Precision::Tf32F32 => M16N8K8_TF32,
            Precision::S8S32 | Precision::E4m3F32 => M16N8K32_8BIT,
            Precision::F64F64 => M8N8K4_F64,
            other => panic!("no CuTe atom for the tensor precision {other}"),
        };
        let s = tensor::shape(p);
        assert_eq!((s.m, s.n, s.k), atom.mnk, "{p:?}");
        bad.extend(compare(
            &format!("bench::tensor {p:?}"),
            &atom,
            |l, i| tensor::a_coord(p, l, i),
            |l, i| tensor::b_coord(p, l, i),
            |l, i| tensor::c_coord(p, l, i),
        ));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// `ldmatrix .m8n8 .b16`, from copy_traits_sm75.hpp: SM75_U32x1_LDSM_N's destination layout
/// (32,32):(32,1) and SM75_U16x2_LDSM_T's ((4,8),(16,2)):((256,16),(1,128)), both mapping a
/// (lane, bit of the lane's register) to a bit of the 8×8 matrix stored row after row.
#[test]
fn ldmatrix_matches_cute() {
    const PLAIN: Cute = Cute {
        thr: &[(32, 32)],
        val: &[(32, 1)],
    };
    const TRANS: Cute = Cute {
        thr: &thr(256, 16),
        val: &[(16, 1), (2, 128)],
    };
    let (plain, trans) = (PLAIN, TRANS);
    for (layout, transposed) in [(plain, false), (trans, true)] {
        for lane in 0..32 {
            for h in 0..2 {
                // The register's half h is bits 16h..16h+16: its first bit says where it came from.
                let bit = layout.offset(lane, 16 * h);
                let want = (bit / 128, bit % 128 / 16);
                assert_eq!(
                    ldmatrix_source(lane, h, transposed),
                    want,
                    "lane {lane} half {h} transposed {transposed}"
                );
                // The element's 16 bits are contiguous.
                assert_eq!(layout.offset(lane, 16 * h + 15), bit + 15);
            }
        }
    }
}
