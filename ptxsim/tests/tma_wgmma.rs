//! TMA feeding wgmma, as Hopper's GEMMs do: one thread inits an mbarrier and issues two
//! `cp.async.bulk.tensor.2d` tile loads (A: 64 x 64 bf16, B: N x 64 bf16, both in the 128-byte
//! swizzle) into 1024-byte-aligned shared memory; every thread waits on the barrier's phase;
//! the warpgroup runs 4 `wgmma.mma_async.m64nNk16.f32.bf16.bf16` over K = 64 straight from the
//! copied tiles (no `fence.proxy.async`: the copies are async-proxy writes), and D is checked
//! against A·Bᵀ computed here, exactly, including tiles partly outside their tensors (zero
//! fill). A B tensor map whose swizzle is not the descriptor's must not give the same D.

mod common;

use ptxsim::{Arg, Error, LaunchConfig, Memory, Module, OobFill, Schedule, Swizzle, TensorMap};

/// The descriptor's fixed fields: LBO 1 (16 bytes, unused in a swizzled K-major layout), SBO
/// 64 (1024 bytes: 8 rows of 128 bytes), swizzle mode 1 (128 bytes) in bits 62-63.
const DESC_HI: u64 = (1 << 16) | (64 << 32) | (1 << 62);

const A_BYTES: u32 = 64 * 128;

fn kernel_text(n: u32) -> String {
    let nregs = n / 2;
    let tile_bytes = A_BYTES + n * 128;
    let d: Vec<String> = (0..nregs).map(|j| format!("%d{j}")).collect();
    let d = d.join(", ");
    let mut s = format!(
        r#".version 8.0
.target sm_90a
.address_size 64
.visible .entry tma_wgmma(.param .u64 out, .param .align 64 .b8 tmap_a[128], .param .align 64 .b8 tmap_b[128], .param .u32 a_row, .param .u32 b_row)
{{
    .reg .pred %p<8>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<24>;
    .reg .f32 %d<{nregs}>;
    .shared .align 1024 .b8 smem[{tile_bytes}];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [out];
    mov.u64 %rd2, tmap_a;
    cvta.param.u64 %rd2, %rd2;
    mov.u64 %rd3, tmap_b;
    cvta.param.u64 %rd3, %rd3;
    ld.param.u32 %r1, [a_row];
    ld.param.u32 %r2, [b_row];
    mov.u32 %r3, bar;
    mov.u32 %r4, smem;
    add.u32 %r5, %r4, {A_BYTES};
    mov.u32 %r6, %tid.x;
    setp.ne.u32 %p1, %r6, 0;
    @%p1 bra init_done;
    mbarrier.init.shared::cta.b64 [%r3], 1;
    fence.mbarrier_init.release.cluster;
init_done:
    bar.sync 0;
    @%p1 bra wait;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], {tile_bytes};
    mov.u32 %r7, 0;
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r4], [%rd2, {{%r7, %r1}}], [%r3];
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r5], [%rd3, {{%r7, %r2}}], [%r3];
wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], 0;
    @!%p2 bra wait;
    cvt.u64.u32 %rd4, %r4;
    shr.u64 %rd4, %rd4, 4;
    and.b64 %rd4, %rd4, 16383;
    or.b64 %rd4, %rd4, {DESC_HI};
    cvt.u64.u32 %rd5, %r5;
    shr.u64 %rd5, %rd5, 4;
    and.b64 %rd5, %rd5, 16383;
    or.b64 %rd5, %rd5, {DESC_HI};
    mov.u32 %r8, 0;
    setp.ne.u32 %p3, %r8, 0;
    setp.eq.u32 %p4, %r8, 0;
    wgmma.fence.sync.aligned;
"#
    );
    // K step k starts 32 bytes (2 descriptor units) further into the swizzled rows.
    for k in 0..4 {
        let scale_d = if k == 0 { "%p3" } else { "%p4" };
        s += &format!(
            "    add.s64 %rd6, %rd4, {};\n    add.s64 %rd7, %rd5, {};\n    wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 {{{d}}}, %rd6, %rd7, {scale_d}, 1, 1, 0, 0;\n",
            2 * k,
            2 * k
        );
    }
    s += "    wgmma.commit_group.sync.aligned;\n    wgmma.wait_group.sync.aligned 0;\n";
    s += &format!(
        "    mul.wide.u32 %rd8, %r6, {};\n    add.u64 %rd9, %rd1, %rd8;\n",
        4 * nregs
    );
    for j in 0..nregs {
        s += &format!("    st.global.f32 [%rd9+{}], %d{j};\n", 4 * j);
    }
    s += "    ret;\n}\n";
    s
}

fn module(n: u32) -> Module {
    common::module(&format!("tma_wgmma_n{n}"), &kernel_text(n))
}

/// (row, col) of D element `e` of lane `l` of warp `w` (PTX ISA, wgmma "Register Fragments").
fn d_rc(w: usize, l: usize, e: usize) -> (usize, usize) {
    let (g, t) = (l / 4, l % 4);
    let row = 16 * w + g + if e % 4 >= 2 { 8 } else { 0 };
    let col = (e / 4) * 8 + t * 2 + (e & 1);
    (row, col)
}

/// A row-major bf16 tensor of `rows` rows of `cols` elements, `stride` elements apart (the
/// padding poisoned with a large value, which must never reach D).
struct Tensor {
    cols: u64,
    rows: u64,
    stride: u64,
    values: Vec<i64>,
}

impl Tensor {
    fn new(cols: u64, rows: u64, stride: u64, seed: u64) -> Tensor {
        let mut g = seed;
        let values = (0..rows * stride)
            .map(|i| {
                if i % stride >= cols {
                    return 1000;
                }
                g = g
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((g >> 33) % 7) as i64 - 3
            })
            .collect();
        Tensor {
            cols,
            rows,
            stride,
            values,
        }
    }

    /// Element (row, col), zero outside the tensor (the TMA's fill).
    fn at(&self, row: u64, col: u64) -> i64 {
        if row < self.rows && col < self.cols {
            self.values[(row * self.stride + col) as usize]
        } else {
            0
        }
    }

    fn upload(&self, mem: &mut Memory) -> u64 {
        let bits: Vec<half::bf16> = self
            .values
            .iter()
            .map(|&v| half::bf16::from_f32(v as f32))
            .collect();
        mem.alloc_from(&bits).addr()
    }

    fn map(&self, base: u64, box_rows: u32, swizzle: Swizzle) -> TensorMap {
        TensorMap {
            base,
            elem_bytes: 2,
            dims: [self.cols, self.rows],
            strides_bytes: [self.stride * 2],
            box_dims: [64, box_rows],
            swizzle,
            oob_fill: OobFill::Zero,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Case {
    n: u32,
    /// A's tensor: rows; the tile's first row.
    a_rows: u64,
    a_row0: u32,
    /// B's tensor: K extent (elements per row), rows; the tile's first row.
    b_cols: u64,
    b_rows: u64,
    b_row0: u32,
}

struct Setup {
    a: Tensor,
    b: Tensor,
}

impl Case {
    fn setup(&self) -> Setup {
        Setup {
            a: Tensor::new(64, self.a_rows, 64, 11 + self.a_rows),
            b: Tensor::new(self.b_cols, self.b_rows, 64, 29 + self.b_rows),
        }
    }

    /// D = A·Bᵀ over the two tiles, as a 64 x N matrix.
    fn expect(&self, s: &Setup) -> Vec<f64> {
        let n = self.n as usize;
        let mut d = vec![0f64; 64 * n];
        for m in 0..64 {
            for col in 0..n {
                let acc: i64 = (0..64)
                    .map(|k| {
                        s.a.at(self.a_row0 as u64 + m as u64, k)
                            * s.b.at(self.b_row0 as u64 + col as u64, k)
                    })
                    .sum();
                d[m * n + col] = acc as f64;
            }
        }
        d
    }

    /// Runs the kernel with B's tensor map in `b_swizzle`; D as a 64 x N matrix.
    fn run(
        &self,
        m: &Module,
        s: &Setup,
        b_swizzle: Swizzle,
        schedule: Schedule,
    ) -> Result<Vec<f64>, Error> {
        let nregs = self.n as usize / 2;
        let mut mem = Memory::new();
        let a_base = s.a.upload(&mut mem);
        let b_base = s.b.upload(&mut mem);
        let out = mem.alloc(128 * nregs * 4);
        let mut cfg = LaunchConfig::new((1, 1, 1), (128, 1, 1), 0);
        cfg.schedule = schedule;
        m.launch_with(
            "tma_wgmma",
            &cfg,
            &[
                Arg::Ptr(out),
                Arg::Bytes(s.a.map(a_base, 64, Swizzle::B128).encode().to_vec()),
                Arg::Bytes(s.b.map(b_base, self.n, b_swizzle).encode().to_vec()),
                Arg::U32(self.a_row0),
                Arg::U32(self.b_row0),
            ],
            &mut mem,
        )?;
        let raw = mem.read::<f32>(out, 128 * nregs)?;
        let n = self.n as usize;
        let mut d = vec![f64::NAN; 64 * n];
        for t in 0..128 {
            for j in 0..nregs {
                let (r, col) = d_rc(t / 32, t % 32, j);
                d[r * n + col] = raw[t * nregs + j] as f64;
            }
        }
        Ok(d)
    }
}

const SCHEDULES: [Schedule; 3] = [
    Schedule::InOrder,
    Schedule::Shuffled { seed: 1 },
    Schedule::Shuffled { seed: 5 },
];

#[test]
fn wgmma_reads_tma_loaded_swizzled_tiles_exactly_with_zero_fill() {
    let cases = [
        // Whole tiles.
        Case {
            n: 64,
            a_rows: 64,
            a_row0: 0,
            b_cols: 64,
            b_rows: 64,
            b_row0: 0,
        },
        // M = 50: A's rows 50..63 are outside the tensor (zero); B whole, N = 128.
        Case {
            n: 128,
            a_rows: 50,
            a_row0: 0,
            b_cols: 64,
            b_rows: 128,
            b_row0: 0,
        },
        // Tiles at an offset and out on both edges: A rows 100..149 of 150; B rows 40..99 of
        // 100 and K 0..55 of 56 (its rows padded to 128 bytes).
        Case {
            n: 64,
            a_rows: 150,
            a_row0: 100,
            b_cols: 56,
            b_rows: 100,
            b_row0: 40,
        },
        Case {
            n: 128,
            a_rows: 150,
            a_row0: 100,
            b_cols: 56,
            b_rows: 100,
            b_row0: 40,
        },
    ];
    let modules = [module(64), module(128)];
    for c in cases {
        let m = &modules[(c.n / 64 - 1) as usize];
        let s = c.setup();
        let want = c.expect(&s);
        // The zero fill shows: D's rows past A's tensor are 0, and not all of D is.
        let valid_rows = (c.a_rows - c.a_row0 as u64).min(64) as usize;
        let n = c.n as usize;
        assert!(want[valid_rows * n..].iter().all(|&v| v == 0.0), "{c:?}");
        assert!(want[..valid_rows * n].iter().any(|&v| v != 0.0), "{c:?}");
        for schedule in SCHEDULES {
            let got = c
                .run(m, &s, Swizzle::B128, schedule)
                .unwrap_or_else(|e| panic!("{c:?} {schedule:?}: {e}"));
            assert_eq!(got, want, "{c:?} {schedule:?}");
        }
    }
}

#[test]
fn a_b_tile_loaded_in_another_swizzle_than_the_descriptor_says_is_not_silently_right() {
    let c = Case {
        n: 64,
        a_rows: 64,
        a_row0: 0,
        b_cols: 64,
        b_rows: 64,
        b_row0: 0,
    };
    let m = module(64);
    let s = c.setup();
    let want = c.expect(&s);
    // The clean twin.
    assert_eq!(
        c.run(&m, &s, Swizzle::B128, Schedule::InOrder).unwrap(),
        want
    );
    // 64-byte swizzle with 128-byte box rows: the driver refuses such a map, and so does
    // ptxsim (wrong values would do as well; only a silent match would not).
    match c.run(&m, &s, Swizzle::B64, Schedule::InOrder) {
        Ok(got) => assert_ne!(got, want, "a 64-byte-swizzled B read as 128 matched"),
        Err(e) => assert!(e.to_string().contains("64-byte swizzle"), "{e}"),
    }
    // Unswizzled B under a 128-byte-swizzle descriptor: a legal map, wrong values.
    let got = c.run(&m, &s, Swizzle::None, Schedule::InOrder).unwrap();
    assert_ne!(
        got, want,
        "an unswizzled B read as 128-byte-swizzled matched"
    );
}
