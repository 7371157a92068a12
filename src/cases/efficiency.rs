//! Size-dependent efficiency: STREAM copy and triad at array sizes from 1 MiB up, fitted as
//! `time = a + bytes / BW`.
//!
//! A case is `efficiency/<kernel>/f32/<KiB per array>`: the STREAM kernel (`copy` or `triad`,
//! the same kernels, work table and gold-value checks as the `stream` family: see
//! [`super::stream`]) on arrays of that many KiB each, so its working set is 2 (copy) or 3
//! (triad) times that. Sizes double from [`MIN_ARRAY_BYTES`] up to a cap each backend sets from
//! its free memory and its time (see [`array_sizes`]); the case id carries the size, so no
//! column was added.
//!
//! The fit ([`fit`]): per kernel, over its valid rows, the median time per launch `t` against
//! the bytes the launch moves `x` (STREAM counting), `t = a + x / BW`, in two stages. `BW` is
//! the slope of ordinary least squares over every size: the sizes double, so the largest ones,
//! far beyond any cache, decide it, which is what an asymptotic bandwidth is (a fit weighted to
//! the small sizes would take the cache's bandwidth for it). `a` is then the least-squares
//! constant on the relative residuals `(t − a − x/BW) / t` with that `BW`, which weighs every
//! size alike (the small sizes are where a constant shows; in absolute terms the largest sizes'
//! noise would swamp it). Where that constant is negative (small arrays that a cache serves run
//! faster than the DRAM line, and no launch cost shows past it) it is 0, and the fit says so.
//! The fit's residual is the root-mean-square relative residual over the sizes.
//!
//! The efficiency curve is each size's bandwidth (`x / t`) over the fit's asymptotic bandwidth
//! (not over the spec sheet's peak): 1 where a size runs at the asymptote, below 1 where the
//! constant still costs, above 1 where a cache serves the arrays.
//!
//! This module must not launch or time anything.

use super::stream::{self, StreamKernel};
use super::{Case, Family, Param, Precision};

/// The kernels the sweep runs: copy (read 1 : write 1) and triad (read 2 : write 1).
pub const KERNELS: [StreamKernel; 2] = [StreamKernel::Copy, StreamKernel::Triad];

/// The one precision: the bandwidth does not depend on it, and one halves the cases.
pub const PRECISION: Precision = Precision::F32;

/// The smallest array: 1 MiB.
pub const MIN_ARRAY_BYTES: u64 = 1 << 20;

/// Samples kept per size (the runner's fewest, with a warm-up of one sample): every size costs
/// its arrays' preparation and a few launches, and the fit, not one point, carries the figure.
pub const SAMPLES: u32 = 3;

/// Whether a case's kernel is one of the sweep's.
pub fn kernel_of(case_kernel: &str) -> Option<StreamKernel> {
    StreamKernel::from_name(case_kernel).filter(|k| KERNELS.contains(k))
}

/// Array sizes in bytes: powers of two from [`MIN_ARRAY_BYTES`] up to `max_array_bytes`
/// (empty where that is below 1 MiB).
pub fn array_sizes(max_array_bytes: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut bytes = MIN_ARRAY_BYTES;
    while bytes <= max_array_bytes {
        out.push(bytes);
        bytes *= 2;
    }
    out
}

/// The case of `kernel` on arrays of `array_bytes` each: a STREAM case of the same kernel and
/// size, in this family, with the KiB per array as its parameter.
pub fn case(kernel: StreamKernel, array_bytes: u64) -> Case {
    let n = array_bytes / stream::element_bytes(PRECISION);
    Case {
        family: Family::Efficiency,
        param: Some(Param::Count(
            u32::try_from(array_bytes >> 10).unwrap_or(u32::MAX),
        )),
        ..kernel.case(PRECISION, n)
    }
}

/// Every case: per kernel, every size of [`array_sizes`] up to `max_array_bytes`.
pub fn cases(max_array_bytes: u64) -> Vec<Case> {
    KERNELS
        .into_iter()
        .flat_map(|k| {
            array_sizes(max_array_bytes)
                .into_iter()
                .map(move |b| case(k, b))
        })
        .collect()
}

/// `time = constant + bytes / bandwidth`, fitted over a kernel's sizes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    /// `a`, seconds per launch whatever its size.
    pub constant_secs: f64,
    /// `BW`, in bytes per second: the bandwidth a launch approaches as it grows.
    pub asymptotic_bytes_per_sec: f64,
    /// Root-mean-square of the relative residuals `(t − fitted) / t`.
    pub rms_relative_residual: f64,
    /// True where the constant came out negative and is reported as 0.
    pub constant_clamped: bool,
}

impl Fit {
    /// The fitted time of a launch moving `bytes`.
    pub fn secs(&self, bytes: f64) -> f64 {
        self.constant_secs + bytes / self.asymptotic_bytes_per_sec
    }
}

/// Fits `time = a + bytes / BW` to `(bytes moved, seconds)` points in two stages (see the
/// module doc): `BW` from the slope of ordinary least squares, `a` from least squares on the
/// relative residuals with that `BW`, at least 0. `None` with fewer than two distinct sizes, a
/// time that is not positive and finite, or a line that does not rise with size.
pub fn fit(points: &[(f64, f64)]) -> Option<Fit> {
    if points
        .iter()
        .any(|&(x, t)| !(x.is_finite() && x > 0.0 && t.is_finite() && t > 0.0))
    {
        return None;
    }
    let distinct = {
        let mut xs: Vec<f64> = points.iter().map(|p| p.0).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs.len()
    };
    if distinct < 2 {
        return None;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mt = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|&(x, _)| (x - mx).powi(2)).sum();
    let sxt: f64 = points.iter().map(|&(x, t)| (x - mx) * (t - mt)).sum();
    let slope = sxt / sxx;
    if !(slope.is_finite() && slope > 0.0) {
        return None;
    }
    // minimise Σ ((t − a − slope·x) / t)²: a = Σ (t − slope·x) / t² / Σ 1 / t²
    let (num, den) = points.iter().fold((0.0, 0.0), |(num, den), &(x, t)| {
        (num + (t - slope * x) / (t * t), den + 1.0 / (t * t))
    });
    let free = num / den;
    let constant = free.max(0.0);
    let rms = (points
        .iter()
        .map(|&(x, t)| ((t - constant - slope * x) / t).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
    Some(Fit {
        constant_secs: constant,
        asymptotic_bytes_per_sec: 1.0 / slope,
        rms_relative_residual: rms,
        constant_clamped: free < 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_double_from_one_mib_to_the_cap() {
        assert_eq!(array_sizes(1 << 19), Vec::<u64>::new());
        assert_eq!(array_sizes(1 << 20), vec![1 << 20]);
        assert_eq!(
            array_sizes((8 << 20) + 5),
            vec![1 << 20, 2 << 20, 4 << 20, 8 << 20]
        );
        let cases = cases(4 << 20);
        let ids: Vec<String> = cases.iter().map(Case::id).collect();
        assert_eq!(
            ids,
            [
                "efficiency/copy/f32/1024",
                "efficiency/copy/f32/2048",
                "efficiency/copy/f32/4096",
                "efficiency/triad/f32/1024",
                "efficiency/triad/f32/2048",
                "efficiency/triad/f32/4096",
            ]
        );
        // the STREAM work table: triad of 1 MiB arrays reads 2 MiB and writes 1 MiB
        let triad = &cases[3];
        assert_eq!(triad.elements, 1 << 18);
        assert_eq!(triad.working_set_bytes, 3 << 20);
        assert_eq!(
            (triad.work.bytes_read, triad.work.bytes_written),
            (2 << 20, 1 << 20)
        );
        assert_eq!(kernel_of("triad"), Some(StreamKernel::Triad));
        assert_eq!(kernel_of("dot"), None);
    }

    /// Exact points on a line give the line back, residual 0; noise of ±1 % gives a residual
    /// of about 1 % and the line within a few percent.
    #[test]
    fn the_fit_recovers_a_line() {
        let (a, bw) = (5e-6, 2e10);
        let exact: Vec<(f64, f64)> = (0..12)
            .map(|i| {
                let x = (1u64 << (20 + i)) as f64;
                (x, a + x / bw)
            })
            .collect();
        let f = fit(&exact).unwrap();
        assert!((f.constant_secs - a).abs() < 1e-12, "{f:?}");
        assert!(
            (f.asymptotic_bytes_per_sec / bw - 1.0).abs() < 1e-9,
            "{f:?}"
        );
        assert!(f.rms_relative_residual < 1e-9 && !f.constant_clamped);
        let noisy: Vec<(f64, f64)> = exact
            .iter()
            .enumerate()
            .map(|(i, &(x, t))| (x, t * if i % 2 == 0 { 1.01 } else { 0.99 }))
            .collect();
        let f = fit(&noisy).unwrap();
        assert!(
            (f.asymptotic_bytes_per_sec / bw - 1.0).abs() < 0.03,
            "{f:?}"
        );
        assert!((0.005..0.02).contains(&f.rms_relative_residual), "{f:?}");
        assert!((f.secs(1e9) / (a + 1e9 / bw) - 1.0).abs() < 0.03);
    }

    /// Small sizes faster than the line (a cache): the constant would be negative, so it is 0
    /// and the fit says so, and the asymptote is still the large sizes' bandwidth; too few
    /// sizes, or a time that falls with size, is no fit.
    #[test]
    fn a_negative_constant_is_clamped_and_bad_points_are_no_fit() {
        let bw = 1e10;
        let mut points: Vec<(f64, f64)> = (0..8)
            .map(|i| {
                let x = (1u64 << (20 + i)) as f64;
                (x, x / bw)
            })
            .collect();
        points[0].1 /= 3.0;
        points[1].1 /= 2.0;
        let f = fit(&points).unwrap();
        assert!(f.constant_clamped && f.constant_secs == 0.0, "{f:?}");
        assert!(
            (f.asymptotic_bytes_per_sec / bw - 1.0).abs() < 0.01,
            "{f:?}"
        );
        assert!(fit(&points[..1]).is_none());
        assert!(fit(&[(1e6, 1.0), (1e6, 2.0)]).is_none(), "one size");
        assert!(fit(&[(1e6, 2.0), (2e6, 1.0)]).is_none(), "falls with size");
        assert!(fit(&[(1e6, 1.0), (2e6, f64::NAN)]).is_none());
        assert!(fit(&[(1e6, 1.0), (2e6, 0.0)]).is_none());
    }
}
