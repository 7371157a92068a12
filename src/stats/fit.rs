//! A transfer's time against its size, fitted as `time = latency + bytes / bandwidth`: the
//! model that estimators take a constant latency and an asymptotic bandwidth from (the host
//! link's copies here; any family that measures one operation at many sizes can use it).
//!
//! The fit is weighted least squares in relative error (each point weighted by 1 / time²), so
//! a 4 KiB copy of microseconds counts as much as a 1 GiB copy of milliseconds: ordinary least
//! squares over sizes spanning six orders of magnitude would fit the largest sizes only and
//! leave the latency to rounding. Pure: this module takes numbers and returns numbers.

/// What [`latency_bandwidth`] found.
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
    let fit = Fit {
        latency_secs: latency,
        bytes_per_sec: 1.0 / slope,
        points: points.len(),
        worst_relative_error: 0.0,
    };
    let worst = points
        .iter()
        .map(|&(x, t)| ((fit.secs(x) - t) / t).abs())
        .fold(0.0, f64::max);
    Ok(Fit {
        worst_relative_error: worst,
        ..fit
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
}
