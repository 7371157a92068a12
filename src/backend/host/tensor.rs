//! The host's matrix unit: Intel AMX (Advanced Matrix Extensions), the CPU's counterpart of a
//! GPU's tensor cores, measured as `tensor/amx/bf16.f32` (`tdpbf16ps`) and `tensor/amx/s8.s32`
//! (`tdpbssd`).
//!
//! Each worker configures eight tiles of 16 rows × 64 bytes (`ldtilecfg`), loads A into `tmm4`
//! and B into `tmm5`, and its [`TILES`] accumulators (16 × 16 words each) into `tmm0`…`tmm3`
//! from their starting values, then runs `steps` trips of one tile product into each
//! accumulator (four independent chains), stores them and releases the tiles (`tilerelease`).
//! One `tdpbf16ps` is 16 × 16 × 32 multiply-adds (16384 operations), one `tdpbssd` 16 × 16 × 64
//! (32768).
//!
//! **Validation.** A and B hold −1, 0 and 1 (from the inputs' hash), the accumulators start
//! at −1, 0 or 1, so after `steps` trips every element is exactly
//! `start + steps · Σ A·B` (f32 holds it while it stays under 2^24, which [`max_steps`] keeps;
//! s32 wraps, exactly). The value depends on the trip count, so a kernel that ran fewer trips
//! than its row counts, or a product laid out wrongly, gives an invalid row. The reference reads
//! the tiles as the hardware does: row `r` of B's tile holds the `G` consecutive k of each
//! column side by side (`G` = 2 for bf16, 4 for s8; Intel's "VNNI" layout, Intel 64 and IA-32
//! Architectures Software Developer's Manual, vol. 2, `TDPBF16PS`, `TDPBSSD`).
//!
//! **Availability.** AMX needs the CPU (CPUID leaf 7: AMX-TILE, AMX-BF16, AMX-INT8) and the
//! operating system's permission for the tile state, asked once per process
//! (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`, Linux 5.16 and newer). Where either
//! is missing the plan has no AMX case and `run` says why; elsewhere (NEON, AVX2-only, AMD)
//! the host has no matrix unit roofprobe measures.
//!
//! **Theory.** One tile product per [`CYCLES_PER_PRODUCT`] cycles per core: Intel states that a
//! 4th-generation Xeon Scalable core (Sapphire Rapids) performs 1024 bf16 or 2048 int8
//! operations per cycle with AMX, a 16 × 16 × 32 (or × 64) product in 16 cycles (Intel, "Intel
//! Advanced Matrix Extensions (Intel AMX)" overview, as summarised in Wikipedia's "Advanced
//! Matrix Extensions"). `%theory` holds the row against that at the clock the cores ran at
//! (measured after the samples, like the FMA peaks'), and a row above 1.05 × it is invalid.
//!
//! This module must not print. `unsafe` here is limited to the AMX instructions, run after the
//! permission was granted, on buffers each worker owns.

use super::clock::{higher_clock, measure_pool_mhz};
use super::pool::Pool;
use super::PreparedCase;
use crate::cases::{arith, input_bits, Case, Family, Precision, Verdict, Work};
use crate::{Error, Result};

/// The kernel name in ids: `tensor/amx/bf16.f32`.
pub const KERNEL: &str = "amx";
/// The precisions of the host's AMX cases, in display order.
pub const PRECISIONS: [Precision; 2] = [Precision::Bf16F32, Precision::S8S32];
/// Accumulator tiles (independent chains) per worker.
pub const TILES: usize = 4;
/// Rows of every tile.
pub const ROWS: usize = 16;
/// Bytes of every tile row.
pub const ROW_BYTES: usize = 64;
/// 32-bit words of one accumulator tile (16 × 16).
pub const TILE_WORDS: usize = ROWS * ROW_BYTES / 4;

/// Cycles one core takes per tile product (`tdpbf16ps` or `tdpbssd` on 16 × 16 accumulators),
/// by the rate Intel states for Sapphire Rapids (the module's documentation).
pub const CYCLES_PER_PRODUCT: f64 = 16.0;

/// Operations one launch should do per thread: a few milliseconds of AMX on one core (4 ms of
/// bf16 on this project's VM), so the workers' wake-up (tens of µs) stays under 1 % of a launch.
pub const FLOPS_PER_THREAD: f64 = if cfg!(debug_assertions) { 2e8 } else { 1.6e10 };

/// Elements of A or B packed into one 32-bit word of a tile row: 2 for bf16, 4 for s8.
pub fn group(precision: Precision) -> usize {
    match precision {
        Precision::Bf16F32 => 2,
        Precision::S8S32 => 4,
        other => panic!("{other} is not an AMX precision"),
    }
}

/// Operations of one tile product: 2 × 16 × 16 × K, K = 16 words × the group.
pub fn ops_per_product(precision: Precision) -> u64 {
    (2 * ROWS * ROWS * ROWS * group(precision)) as u64
}

/// The most trips one launch may run so that every accumulator stays exact: for f32, under
/// 2^24 from any start (|start| ≤ 1 and a trip adds at most K); s32 wraps exactly.
pub fn max_steps(precision: Precision) -> u64 {
    match precision {
        Precision::Bf16F32 => ((1u64 << 24) - 2) / (ROWS * group(precision)) as u64,
        _ => u64::MAX,
    }
}

/// The AMX case of `precision` for `threads` workers, about [`FLOPS_PER_THREAD`] per worker
/// per launch (at most [`max_steps`]).
pub fn case(precision: Precision, threads: usize) -> Case {
    let per_trip = TILES as u64 * ops_per_product(precision);
    let steps = ((FLOPS_PER_THREAD / per_trip as f64).ceil() as u64).clamp(1, max_steps(precision));
    let elements = (threads * TILES * TILE_WORDS) as u64;
    Case {
        family: Family::Tensor,
        kernel: KERNEL.to_string(),
        precision,
        param: None,
        elements,
        // the accumulators, and A and B per worker
        working_set_bytes: elements * 4 + (threads * 2 * ROWS * ROW_BYTES) as u64,
        work: Work {
            bytes_read: 0,
            bytes_written: 0,
            flops: threads as u64 * steps * per_trip,
        },
    }
}

/// The trips a case was built with, or why it is not an AMX case for `threads` workers.
pub fn steps_of(case: &Case, threads: usize) -> std::result::Result<u64, String> {
    let per_launch = threads as u64 * TILES as u64 * ops_per_product(case.precision);
    if case.family != Family::Tensor
        || case.kernel != KERNEL
        || case.elements != (threads * TILES * TILE_WORDS) as u64
        || !case.work.flops.is_multiple_of(per_launch)
        || case.work.flops / per_launch > max_steps(case.precision)
    {
        return Err(format!(
            "{} is not an AMX case planned for {threads} threads",
            case.id()
        ));
    }
    Ok(case.work.flops / per_launch)
}

/// Whether this process may run AMX in `precision`, or why not. The permission is asked of the
/// kernel once per process, on the first call.
pub fn available(precision: Precision) -> std::result::Result<(), String> {
    #[cfg(target_arch = "x86_64")]
    {
        static PERMISSION: std::sync::OnceLock<std::result::Result<(), String>> =
            std::sync::OnceLock::new();
        // CPUID leaf 7 is read only where the CPU reports it (its max leaf, from leaf 0).
        let edx = if std::arch::x86_64::__cpuid(0).eax >= 7 {
            std::arch::x86_64::__cpuid_count(7, 0).edx
        } else {
            0
        };
        let (tile, bf16, int8) = (edx >> 24 & 1 == 1, edx >> 22 & 1 == 1, edx >> 25 & 1 == 1);
        let unit = match precision {
            Precision::Bf16F32 => bf16,
            Precision::S8S32 => int8,
            _ => false,
        };
        if !tile || !unit {
            return Err(format!(
                "this CPU has no AMX for {precision} (CPUID: AMX-TILE {tile}, AMX-BF16 {bf16}, \
                 AMX-INT8 {int8})"
            ));
        }
        PERMISSION
            .get_or_init(|| {
                const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
                const XFEATURE_XTILEDATA: libc::c_long = 18;
                // SAFETY: a plain system call with integer arguments.
                let r = unsafe {
                    libc::syscall(
                        libc::SYS_arch_prctl,
                        ARCH_REQ_XCOMP_PERM,
                        XFEATURE_XTILEDATA,
                    )
                };
                if r == 0 {
                    Ok(())
                } else {
                    Err(format!(
                        "the operating system refused AMX's tile state (arch_prctl \
                         ARCH_REQ_XCOMP_PERM: {}); Linux 5.16 or newer grants it",
                        std::io::Error::last_os_error()
                    ))
                }
            })
            .clone()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = precision;
        Err("AMX is an x86-64 extension".to_string())
    }
}

/// The AMX cases this process may run (`roofprobe devices` says why any other is missing).
pub fn cases(threads: usize) -> Vec<Case> {
    PRECISIONS
        .into_iter()
        .filter(|&p| available(p).is_ok())
        .map(|p| case(p, threads))
        .collect()
}

/// A's tile (16 rows of 64 bytes): element `(m, k)` at byte `m · 64 + k · bytes`; −1, 0 and 1.
fn a_tile(precision: Precision) -> Vec<u8> {
    tile_of(precision, 101)
}

/// B's tile in the VNNI layout: row `r`, column `n`, element `i` (k = G·r + i) at word
/// `r · 16 + n`, element `i` of it.
fn b_tile(precision: Precision) -> Vec<u8> {
    tile_of(precision, 102)
}

/// A tile of −1, 0 and 1 from the inputs' hash of `array`, in `precision`'s input type.
fn tile_of(precision: Precision, array: u64) -> Vec<u8> {
    // 16 rows × 16 words × the group
    let elements = ROWS * (ROW_BYTES / 4) * group(precision);
    let mut out = Vec::with_capacity(ROWS * ROW_BYTES);
    for i in 0..elements {
        let v = (input_bits(array, i as u64) % 3) as i64 - 1;
        match precision {
            // −1, 0 and 1 are exact in bf16
            Precision::Bf16F32 => out.extend_from_slice(&arith::bf16_bits(v as f64).to_le_bytes()),
            _ => out.push(v as i8 as u8),
        }
    }
    out
}

/// The value of element `i` of a tile made by [`tile_of`].
fn tile_value(precision: Precision, tile: &[u8], i: usize) -> i64 {
    match precision {
        Precision::Bf16F32 => {
            arith::bf16_value(u16::from_le_bytes([tile[2 * i], tile[2 * i + 1]])) as i64
        }
        _ => tile[i] as i8 as i64,
    }
}

/// Σ_k A[m][k] · B[k][n] for every (m, n) of one tile product, read from the tiles as the
/// hardware reads them.
fn product(precision: Precision, a: &[u8], b: &[u8]) -> Vec<i64> {
    let g = group(precision);
    let words = ROW_BYTES / 4;
    let mut out = vec![0i64; TILE_WORDS];
    for m in 0..ROWS {
        for n in 0..ROWS {
            let mut s = 0;
            for r in 0..words {
                for i in 0..g {
                    s += tile_value(precision, a, m * words * g + r * g + i)
                        * tile_value(precision, b, r * words * g + n * g + i);
                }
            }
            out[m * ROWS + n] = s;
        }
    }
    out
}

/// The starting value of word `i` of accumulator `tile`: −1, 0 or 1.
fn start(tile: usize, i: usize) -> i64 {
    (input_bits(103 + tile as u64, i as u64) % 3) as i64 - 1
}

/// The 32-bit word an accumulator holds for the integer `v`.
fn word(precision: Precision, v: i64) -> u32 {
    match precision {
        Precision::Bf16F32 => (v as f32).to_bits(),
        _ => v as i32 as u32,
    }
}

/// What every word of every accumulator must hold after `steps` trips (one tile's worth,
/// [`TILES`] × [`TILE_WORDS`]).
fn expected(precision: Precision, steps: u64) -> Vec<u32> {
    let p = product(precision, &a_tile(precision), &b_tile(precision));
    (0..TILES * TILE_WORDS)
        .map(|j| {
            let (t, i) = (j / TILE_WORDS, j % TILE_WORDS);
            match precision {
                Precision::Bf16F32 => word(precision, start(t, i) + steps as i64 * p[i]),
                _ => (start(t, i) as i32).wrapping_add((steps as i32).wrapping_mul(p[i] as i32))
                    as u32,
            }
        })
        .collect()
}

/// The `ldtilecfg` operand: palette 1, tiles 0…7 of [`ROWS`] rows × [`ROW_BYTES`] bytes.
pub fn tile_config() -> [u8; 64] {
    let mut cfg = [0u8; 64];
    cfg[0] = 1;
    for t in 0..8 {
        cfg[16 + 2 * t] = ROW_BYTES as u8;
        cfg[48 + t] = ROWS as u8;
    }
    cfg
}

/// Runs `steps` trips of the tile product of `precision` on this thread: accumulators from
/// `starts` ([`TILES`] tiles of 16 rows × 64 bytes), results to `out` (as many).
///
/// # Safety
/// [`available`] returned `Ok` for `precision` in this process; `a` and `b` hold one tile each
/// (1024 bytes), `starts` and `out` [`TILES`] tiles each.
#[cfg(target_arch = "x86_64")]
unsafe fn run_tiles(
    precision: Precision,
    steps: u64,
    a: &[u8],
    b: &[u8],
    starts: &[u32],
    out: &mut [u32],
) {
    use std::arch::asm;
    debug_assert!(a.len() >= ROWS * ROW_BYTES && b.len() >= ROWS * ROW_BYTES);
    debug_assert!(starts.len() >= TILES * TILE_WORDS && out.len() >= TILES * TILE_WORDS);
    let cfg = tile_config();
    let s = starts.as_ptr();
    let o = out.as_mut_ptr();
    macro_rules! tiles {
        ($op:literal) => {
            asm!(
                "ldtilecfg [{cfg}]",
                "tileloadd tmm4, [{a} + {stride}*1]",
                "tileloadd tmm5, [{b} + {stride}*1]",
                "tileloadd tmm0, [{s0} + {stride}*1]",
                "tileloadd tmm1, [{s1} + {stride}*1]",
                "tileloadd tmm2, [{s2} + {stride}*1]",
                "tileloadd tmm3, [{s3} + {stride}*1]",
                "test {n}, {n}",
                "jz 3f",
                "2:",
                concat!($op, " tmm0, tmm4, tmm5"),
                concat!($op, " tmm1, tmm4, tmm5"),
                concat!($op, " tmm2, tmm4, tmm5"),
                concat!($op, " tmm3, tmm4, tmm5"),
                "dec {n}",
                "jnz 2b",
                "3:",
                "tilestored [{o0} + {stride}*1], tmm0",
                "tilestored [{o1} + {stride}*1], tmm1",
                "tilestored [{o2} + {stride}*1], tmm2",
                "tilestored [{o3} + {stride}*1], tmm3",
                "tilerelease",
                cfg = in(reg) cfg.as_ptr(),
                a = in(reg) a.as_ptr(),
                b = in(reg) b.as_ptr(),
                s0 = in(reg) s,
                s1 = in(reg) s.add(TILE_WORDS),
                s2 = in(reg) s.add(2 * TILE_WORDS),
                s3 = in(reg) s.add(3 * TILE_WORDS),
                o0 = in(reg) o,
                o1 = in(reg) o.add(TILE_WORDS),
                o2 = in(reg) o.add(2 * TILE_WORDS),
                o3 = in(reg) o.add(3 * TILE_WORDS),
                stride = in(reg) ROW_BYTES,
                n = inout(reg) steps => _,
                options(nostack),
            )
        };
    }
    match precision {
        Precision::Bf16F32 => tiles!("tdpbf16ps"),
        _ => tiles!("tdpbssd"),
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn run_tiles(_: Precision, _: u64, _: &[u8], _: &[u8], _: &[u32], _: &mut [u32]) {
    unreachable!("AMX cases are planned on x86-64 only")
}

/// Prepares an AMX case.
pub fn prepare<'p>(pool: &'p Pool, case: &Case) -> Result<Box<dyn PreparedCase + 'p>> {
    Ok(Box::new(AmxCase::new(pool, case)?))
}

/// An AMX case: every worker runs its four chains in tiles and stores them at the end.
struct AmxCase<'p> {
    pool: &'p Pool,
    precision: Precision,
    steps: u64,
    a: Vec<u8>,
    b: Vec<u8>,
    starts: Vec<u32>,
    /// Worker t's accumulators at `[t · TILES · TILE_WORDS ..]`.
    out: Vec<u32>,
    clock_mhz: Option<f64>,
}

impl<'p> AmxCase<'p> {
    fn new(pool: &'p Pool, case: &Case) -> Result<Self> {
        let steps = steps_of(case, pool.threads()).map_err(Error::Usage)?;
        available(case.precision).map_err(|e| Error::Usage(format!("{}: {e}", case.id())))?;
        let precision = case.precision;
        let starts = (0..TILES * TILE_WORDS)
            .map(|j| word(precision, start(j / TILE_WORDS, j % TILE_WORDS)))
            .collect();
        Ok(AmxCase {
            pool,
            precision,
            steps,
            a: a_tile(precision),
            b: b_tile(precision),
            starts,
            out: vec![0x7FC0_DEAD; pool.threads() * TILES * TILE_WORDS],
            clock_mhz: None,
        })
    }
}

impl PreparedCase for AmxCase<'_> {
    fn run(&mut self, reps: u32) -> Result<f64> {
        let per_worker = TILES * TILE_WORDS;
        let (precision, steps) = (self.precision, self.steps);
        let (a, b, starts) = (&self.a, &self.b, &self.starts);
        // SAFETY: `new` checked `available`; the tiles and buffers have their sizes.
        let kernel = |mine: &mut [u32]| unsafe { run_tiles(precision, steps, a, b, starts, mine) };
        self.pool
            .time_in_slices(&mut self.out, per_worker, reps, "AMX kernel", kernel)
    }

    fn verify(&mut self) -> Result<Verdict> {
        Ok(check(self.precision, self.steps, &self.out))
    }

    fn launch_note(&self) -> String {
        format!(
            "{} pinned threads, AMX {} x {} tiles of 16x16, theory: one tile product per 16 \
             cycles per core",
            self.pool.threads(),
            match self.precision {
                Precision::Bf16F32 => "tdpbf16ps",
                _ => "tdpbssd",
            },
            TILES
        )
    }

    fn clock_mhz(&mut self) -> Option<f64> {
        self.clock_mhz = higher_clock(self.clock_mhz, measure_pool_mhz(self.pool));
        self.clock_mhz
    }

    fn theory_gflops(&self, clock_mhz: f64) -> Option<f64> {
        Some(theory_gflops(
            self.precision,
            self.pool.threads(),
            clock_mhz,
        ))
    }
}

/// The AMX peak of `threads` cores at `clock_mhz`: one tile product per
/// [`CYCLES_PER_PRODUCT`] cycles per core.
pub fn theory_gflops(precision: Precision, threads: usize, clock_mhz: f64) -> f64 {
    threads as f64 * ops_per_product(precision) as f64 / CYCLES_PER_PRODUCT * clock_mhz * 1e-3
}

/// Checks every worker's accumulators against [`expected`] after `steps` trips.
fn check(precision: Precision, steps: u64, out: &[u32]) -> Verdict {
    let want = expected(precision, steps);
    let show = |w: u32| match precision {
        Precision::Bf16F32 => format!("{}", f32::from_bits(w)),
        _ => format!("{}", w as i32),
    };
    let wrong: Vec<usize> = (0..out.len())
        .filter(|&i| out[i] != want[i % want.len()])
        .collect();
    match wrong.first() {
        None => Verdict::valid(),
        Some(&i) => Verdict::invalid(format!(
            "{} of {} accumulator words wrong; word {i}: is {} should be {} ({steps} trips)",
            wrong.len(),
            out.len(),
            show(out[i]),
            show(want[i % want.len()])
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `steps` trips of `precision` on this thread, or says why it cannot.
    fn run_here(precision: Precision, steps: u64) -> Option<Vec<u32>> {
        if let Err(why) = available(precision) {
            eprintln!("skipped: {why}");
            return None;
        }
        let starts: Vec<u32> = (0..TILES * TILE_WORDS)
            .map(|j| word(precision, start(j / TILE_WORDS, j % TILE_WORDS)))
            .collect();
        let mut out = vec![0u32; TILES * TILE_WORDS];
        // SAFETY: available, and the buffers have their sizes.
        unsafe {
            run_tiles(
                precision,
                steps,
                &a_tile(precision),
                &b_tile(precision),
                &starts,
                &mut out,
            )
        };
        Some(out)
    }

    #[test]
    fn the_tiles_compute_the_exact_product_the_reference_reads_from_them() {
        for p in PRECISIONS {
            for steps in [0, 1, 7, 1000] {
                let Some(out) = run_here(p, steps) else {
                    continue;
                };
                let v = check(p, steps, &out);
                assert!(v.valid, "{p}, {steps} trips: {}", v.detail);
                // and the count is seen: the same output is wrong for one trip more
                let v = check(p, steps + 1, &out);
                assert!(!v.valid, "{p}: {steps} trips pass as {}", steps + 1);
            }
        }
    }

    #[test]
    fn the_reference_product_is_a_matrix_product_of_the_vnni_layout() {
        // B's tile from a plain K x 16 matrix, packed by hand: k = G·r + i at row r, word n,
        // element i.
        for p in PRECISIONS {
            let (g, a, b) = (group(p), a_tile(p), b_tile(p));
            let k = 16 * g;
            let am = |m: usize, kk: usize| tile_value(p, &a, m * k + kk);
            let bm = |kk: usize, n: usize| tile_value(p, &b, (kk / g) * 16 * g + n * g + kk % g);
            let got = product(p, &a, &b);
            for m in 0..16 {
                for n in 0..16 {
                    let want: i64 = (0..k).map(|kk| am(m, kk) * bm(kk, n)).sum();
                    assert_eq!(got[m * 16 + n], want, "{p} ({m}, {n})");
                }
            }
            assert!(
                got.iter().any(|&v| v != 0),
                "{p}: an all-zero product proves nothing"
            );
        }
    }

    #[test]
    fn cases_count_their_work_and_stay_exact() {
        for p in PRECISIONS {
            let c = case(p, 3);
            assert_eq!(c.id(), format!("tensor/amx/{p}"));
            let steps = steps_of(&c, 3).unwrap();
            assert!(steps >= 1 && steps <= max_steps(p));
            assert_eq!(c.work.flops, 3 * steps * TILES as u64 * ops_per_product(p));
            assert!(steps_of(&c, 2).is_err(), "planned for 3 threads");
        }
        assert_eq!(ops_per_product(Precision::Bf16F32), 16384);
        assert_eq!(ops_per_product(Precision::S8S32), 32768);
        // Intel's figures: 1024 bf16 and 2048 int8 operations per cycle per core
        assert_eq!(theory_gflops(Precision::Bf16F32, 1, 1000.0), 1024.0);
        assert_eq!(theory_gflops(Precision::S8S32, 2, 1000.0), 4096.0);
        // the largest f32 value a launch reaches is exact
        let most = 1 + max_steps(Precision::Bf16F32) * 32;
        assert!(most < 1 << 24);
    }

    #[test]
    fn a_wrong_trip_count_or_a_stale_word_is_invalid() {
        let p = Precision::S8S32;
        let mut out: Vec<u32> = expected(p, 5).repeat(2);
        assert!(check(p, 5, &out).valid);
        assert!(!check(p, 4, &out).valid);
        out[TILES * TILE_WORDS + 17] ^= 1;
        let v = check(p, 5, &out);
        assert!(
            !v.valid && v.detail.starts_with("1 of 2048"),
            "{}",
            v.detail
        );
    }
}
