//! A transfer's time against its size, fitted as `time = latency + bytes / bandwidth`: the
//! model that estimators take a constant latency and an asymptotic bandwidth from. One type,
//! [`Fit`], and two ways to fit it, because the two families that use it ask different things
//! of the line:
//!
//! - [`latency_bandwidth`] (the host link's copies, 4 KiB to 1 GiB) is weighted least squares
//!   in relative error (each point weighted by 1 / time²), so a 4 KiB copy of microseconds
//!   counts as much as a 1 GiB copy of milliseconds: ordinary least squares over sizes spanning
//!   six orders of magnitude would fit the largest sizes only and leave the latency to
//!   rounding. A copy has a latency, so a negative one means the points are no transfer, and
//!   the fit is refused.
//! - [`two_stage`] (the STREAM size sweep, `efficiency`, 1 MiB up) takes the bandwidth from the
//!   slope of ordinary least squares, so the largest sizes, far beyond any cache, decide it (a
//!   fit weighted to the small sizes would take the cache's bandwidth for it), and then the
//!   latency from least squares on the relative residuals with that slope. Small arrays that a
//!   cache serves run faster than the DRAM line, so a negative latency is expected there: it is
//!   reported as 0, and the fit says so ([`Fit::latency_clamped`]).
//!
//! Merging the two into one method would change the committed figures of one family or the
//! other, so each keeps its own. Pure: this module takes numbers and returns numbers.

/// A line `time = latency + bytes / bandwidth`, as [`latency_bandwidth`] or [`two_stage`]
/// fitted it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    /// The constant: seconds a transfer of no bytes would take.
    pub latency_secs: f64,
    /// The asymptote: bytes per second a very large transfer approaches.
    pub bytes_per_sec: f64,
    /// Points the fit used.
    pub points: usize,
    /// The largest relative difference between a point's time and the fitted time.
    pub worst_relative_error: f64,
    /// Root-mean-square of the relative residuals `(t − fitted) / t`.
    pub rms_relative_residual: f64,
    /// True where the latency came out negative and is reported as 0 ([`two_stage`] only).
    pub latency_clamped: bool,
}

impl Fit {
    /// The fitted seconds of a transfer of `bytes`.
    pub fn secs(&self, bytes: f64) -> f64 {
        self.latency_secs + bytes / self.bytes_per_sec
    }
}

/// Fits `time = latency + bytes / bandwidth` to `(bytes, secs)` points. Refused (with why)
/// with fewer than two distinct sizes, a time that is not positive and finite, or a fit that
/// is not a transfer: a slope that is not positive (no bandwidth) or a negative latency.
pub fn latency_bandwidth(points: &[(f64, f64)]) -> Result<Fit, String> {
    if let Some((b, t)) = points
        .iter()
        .find(|(b, t)| !(b.is_finite() && *b >= 0.0 && t.is_finite() && *t > 0.0))
    {
        return Err(format!(
            "a point is not a size and a time: {b} bytes, {t} s"
        ));
    }
    let first = points.first().map(|p| p.0);
    if points.len() < 2 || points.iter().all(|p| Some(p.0) == first) {
        return Err(format!(
            "{} point(s) of fewer than two sizes: a line needs two",
            points.len()
        ));
    }
    // Weighted normal equations, weight w = 1/t²: minimise Σ w (t − a − b·x)².
    let (mut sw, mut swx, mut swxx, mut swt, mut swxt) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x, t) in points {
        let w = 1.0 / (t * t);
        sw += w;
        swx += w * x;
        swxx += w * x * x;
        swt += w * t;
        swxt += w * x * t;
    }
    let det = sw * swxx - swx * swx;
    if !(det.is_finite() && det > 0.0) {
        return Err("the sizes do not determine a line".into());
    }
    let slope = (sw * swxt - swx * swt) / det;
    let latency = (swxx * swt - swx * swxt) / det;
    if !(slope.is_finite() && slope > 0.0) {
        return Err(format!(
            "time does not grow with size (slope {slope:e} s/byte): no bandwidth to fit"
        ));
    }
    if !(latency.is_finite() && latency >= 0.0) {
        return Err(format!(
            "the fitted latency is {latency:e} s: the times do not follow latency + bytes / bandwidth"
        ));
    }
    Ok(line(latency, slope, false, points))
}

/// The line of `latency` and `slope` (seconds per byte) fitted to `points`, its residuals over
/// them filled in.
fn line(latency: f64, slope: f64, latency_clamped: bool, points: &[(f64, f64)]) -> Fit {
    let fit = Fit {
        latency_secs: latency,
        bytes_per_sec: 1.0 / slope,
        points: points.len(),
        worst_relative_error: 0.0,
        rms_relative_residual: 0.0,
        latency_clamped,
    };
    let relative = || points.iter().map(|&(x, t)| (fit.secs(x) - t) / t);
    let n = points.len().max(1) as f64;
    Fit {
        worst_relative_error: relative().map(f64::abs).fold(0.0, f64::max),
        rms_relative_residual: (relative().map(|r| r * r).sum::<f64>() / n).sqrt(),
        ..fit
    }
}

/// Fits `time = latency + bytes / bandwidth` to `(bytes moved, seconds)` points in two stages
/// (the module doc): the bandwidth from the slope of ordinary least squares, the latency from
/// least squares on the relative residuals with that slope, at least 0. `None` with fewer than
/// two distinct sizes, a size or time that is not positive and finite, or a line that does not
/// rise with size.
pub fn two_stage(points: &[(f64, f64)]) -> Option<Fit> {
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
    let latency = free.max(0.0);
    // the residual as the size sweep has always written it: with the slope itself, not its
    // reciprocal's reciprocal
    let rms = (points
        .iter()
        .map(|&(x, t)| ((t - latency - slope * x) / t).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
    Some(Fit {
        rms_relative_residual: rms,
        ..line(latency, slope, free < 0.0, points)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes() -> Vec<f64> {
        (0..10).map(|i| 4096.0 * 4f64.powi(i)).collect()
    }

    /// Exact points of a known line give back its latency and bandwidth, whatever the spread
    /// of the sizes: the 4 KiB point's microseconds fix the latency, the 1 GiB point's
    /// milliseconds the bandwidth.
    #[test]
    fn exact_points_give_back_the_line() {
        for (latency, bw) in [(8e-6, 55e9), (2e-6, 3000e9), (0.0, 12e9), (40e-6, 1e6)] {
            let points: Vec<(f64, f64)> =
                sizes().into_iter().map(|b| (b, latency + b / bw)).collect();
            let fit = latency_bandwidth(&points).unwrap();
            assert!(
                (fit.latency_secs - latency).abs() < 1e-9 + latency * 1e-6,
                "{fit:?}"
            );
            assert!((fit.bytes_per_sec / bw - 1.0).abs() < 1e-6, "{fit:?}");
            assert!(fit.worst_relative_error < 1e-6 && fit.points == 10);
        }
    }

    /// Noise of a few percent on each point moves the figures by about as much, not by the
    /// ratio of the sizes: the small sizes' latency survives the large sizes' time.
    #[test]
    fn noisy_points_stay_close() {
        let (latency, bw) = (10e-6, 50e9);
        let points: Vec<(f64, f64)> = sizes()
            .into_iter()
            .enumerate()
            .map(|(i, b)| (b, (latency + b / bw) * if i % 2 == 0 { 1.03 } else { 0.97 }))
            .collect();
        let fit = latency_bandwidth(&points).unwrap();
        assert!((fit.latency_secs / latency - 1.0).abs() < 0.1, "{fit:?}");
        assert!((fit.bytes_per_sec / bw - 1.0).abs() < 0.1, "{fit:?}");
        assert!(fit.worst_relative_error > 0.02 && fit.worst_relative_error < 0.1);
    }

    /// What no line of a transfer fits is refused, saying why.
    #[test]
    fn what_is_not_a_transfer_is_refused() {
        let why = |p: &[(f64, f64)]| latency_bandwidth(p).unwrap_err();
        assert!(why(&[]).contains("two"));
        assert!(why(&[(4096.0, 1e-5), (4096.0, 2e-5)]).contains("two sizes"));
        assert!(why(&[(4096.0, 1e-5), (8192.0, 0.0)]).contains("not a size and a time"));
        assert!(why(&[(4096.0, f64::NAN), (8192.0, 1e-5)]).contains("not a size"));
        // faster at the larger size: no bandwidth
        assert!(why(&[(4096.0, 2e-5), (1e9, 1e-5)]).contains("does not grow"));
        // a steep line through a tiny time: the latency would be negative
        assert!(why(&[(1e6, 1e-6), (2e6, 1e-3)]).contains("latency"));
    }

    /// Exact points on a line give the line back, residual 0; noise of ±1 % gives a residual
    /// of about 1 % and the line within a few percent.
    #[test]
    fn the_two_stage_fit_recovers_a_line() {
        let (a, bw) = (5e-6, 2e10);
        let exact: Vec<(f64, f64)> = (0..12)
            .map(|i| {
                let x = (1u64 << (20 + i)) as f64;
                (x, a + x / bw)
            })
            .collect();
        let f = two_stage(&exact).unwrap();
        assert!((f.latency_secs - a).abs() < 1e-12, "{f:?}");
        assert!((f.bytes_per_sec / bw - 1.0).abs() < 1e-9, "{f:?}");
        assert!(f.rms_relative_residual < 1e-9 && !f.latency_clamped);
        let noisy: Vec<(f64, f64)> = exact
            .iter()
            .enumerate()
            .map(|(i, &(x, t))| (x, t * if i % 2 == 0 { 1.01 } else { 0.99 }))
            .collect();
        let f = two_stage(&noisy).unwrap();
        assert!((f.bytes_per_sec / bw - 1.0).abs() < 0.03, "{f:?}");
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
        let f = two_stage(&points).unwrap();
        assert!(f.latency_clamped && f.latency_secs == 0.0, "{f:?}");
        assert!((f.bytes_per_sec / bw - 1.0).abs() < 0.01, "{f:?}");
        assert!(two_stage(&points[..1]).is_none());
        assert!(two_stage(&[(1e6, 1.0), (1e6, 2.0)]).is_none(), "one size");
        assert!(
            two_stage(&[(1e6, 2.0), (2e6, 1.0)]).is_none(),
            "falls with size"
        );
        assert!(two_stage(&[(1e6, 1.0), (2e6, f64::NAN)]).is_none());
        assert!(two_stage(&[(1e6, 1.0), (2e6, 0.0)]).is_none());
    }
}
