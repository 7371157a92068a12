//! Summary statistics of timing samples, and the one [`median`] (and [`mad`]) the suite takes
//! of anything.
//!
//! A [`Summary`] is built only from a valid sample: at least two points, every one finite and
//! strictly positive (a time of zero or below means the clock or the kernel is broken, and is
//! reported as an error instead of a figure). Its invariants, asserted in tests:
//! `min <= median <= max`, `min <= mean <= max`, `stddev >= 0`, `mad >= 0`.

pub mod changepoint;
pub mod fit;

use serde::{Deserialize, Serialize};

/// Robust and classical statistics of one case's per-launch times, in seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub samples: usize,
    pub min_secs: f64,
    pub median_secs: f64,
    pub mean_secs: f64,
    pub max_secs: f64,
    /// Sample standard deviation (n − 1 in the denominator).
    pub stddev_secs: f64,
    /// Coefficient of variation: stddev / mean.
    pub cv: f64,
    /// Median absolute deviation from the median (unscaled).
    pub mad_secs: f64,
}

/// The CV of a growing sample, updated one point at a time (Welford's method): what
/// [`Summary::from_secs`] would report for the points so far, without keeping or sorting them.
#[derive(Clone, Debug, Default)]
pub struct RunningCv {
    n: usize,
    mean: f64,
    /// Sum of squared deviations from the running mean.
    m2: f64,
}

impl RunningCv {
    pub fn push(&mut self, x: f64) {
        self.n += 1;
        let before = x - self.mean;
        self.mean += before / self.n as f64;
        self.m2 += before * (x - self.mean);
    }

    /// Sample standard deviation / mean; `None` before two points or for a mean that is not
    /// positive.
    pub fn cv(&self) -> Option<f64> {
        (self.n >= 2 && self.mean > 0.0).then(|| (self.m2 / (self.n - 1) as f64).sqrt() / self.mean)
    }
}

/// Why a case stopped taking samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// It took the number of samples fixed before it began.
    Count,
    /// `--until-stable`: the CV of its samples fell to the target.
    Stable,
    /// `--until-stable`: the time limit passed before the CV fell to the target.
    TimeLimit,
    /// `--until-stable`: a signal stopped the run ([`crate::run::interrupt`]) before the CV fell to
    /// the target; the samples taken (the minimum at least) are its figure.
    Interrupted,
}

impl Stopped {
    /// Every reason, as the CSV's readers accept them.
    pub const ALL: [Stopped; 4] = [
        Stopped::Count,
        Stopped::Stable,
        Stopped::TimeLimit,
        Stopped::Interrupted,
    ];

    /// As the CSV's `stopped_by` column writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Stopped::Count => "count",
            Stopped::Stable => "stable",
            Stopped::TimeLimit => "time_limit",
            Stopped::Interrupted => "interrupted",
        }
    }
}

/// Why a sample cannot be summarised.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SampleError {
    #[error("a timing sample needs at least 2 points, got {0}")]
    TooFew(usize),
    #[error("timing sample point {index} is {value}, not a finite positive time")]
    NotPositive { index: usize, value: f64 },
}

/// The median of `values`, in any order: the middle point of an odd count, the mean of the two
/// middle points of an even count; `None` when empty. Ordered by [`f64::total_cmp`], so a NaN
/// sorts last instead of panicking (the callers' values are finite: the readers and
/// [`Summary::from_secs`] refuse NaN). The one median of the suite: samples, fleet metrics and
/// the change-point noise all take it from here.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// The median absolute deviation from the median (unscaled); `None` when `values` is empty.
pub fn mad(values: &[f64]) -> Option<f64> {
    let m = median(values)?;
    median(&values.iter().map(|x| (x - m).abs()).collect::<Vec<_>>())
}

impl Summary {
    /// Summarises per-launch times in seconds.
    pub fn from_secs(samples: &[f64]) -> Result<Summary, SampleError> {
        if samples.len() < 2 {
            return Err(SampleError::TooFew(samples.len()));
        }
        if let Some((index, &value)) = samples
            .iter()
            .enumerate()
            .find(|(_, v)| !(v.is_finite() && **v > 0.0))
        {
            return Err(SampleError::NotPositive { index, value });
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len() as f64;
        let mean = sorted.iter().sum::<f64>() / n;
        let var = sorted.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let median = median(&sorted).expect("a sample has at least two points");
        let stddev = var.sqrt();
        Ok(Summary {
            samples: sorted.len(),
            min_secs: sorted[0],
            median_secs: median,
            // Clamp against rounding: the mean of positive numbers lies within [min, max].
            mean_secs: mean.clamp(sorted[0], sorted[sorted.len() - 1]),
            max_secs: sorted[sorted.len() - 1],
            stddev_secs: stddev,
            cv: stddev / mean,
            mad_secs: mad(&sorted).expect("a sample has at least two points"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_sample() {
        let s = Summary::from_secs(&[4.0, 1.0, 3.0, 2.0, 10.0]).unwrap();
        assert_eq!(s.samples, 5);
        assert_eq!(s.min_secs, 1.0);
        assert_eq!(s.max_secs, 10.0);
        assert_eq!(s.median_secs, 3.0);
        assert_eq!(s.mean_secs, 4.0);
        // deviations from 3: 2,1,0,1,7 -> sorted 0,1,1,2,7 -> 1
        assert_eq!(s.mad_secs, 1.0);
        let var: f64 = [9.0, 4.0, 1.0, 0.0, 36.0].iter().sum::<f64>() / 4.0;
        assert!((s.stddev_secs - var.sqrt()).abs() < 1e-12);
        assert!((s.cv - var.sqrt() / 4.0).abs() < 1e-12);
    }

    #[test]
    fn even_count_median_is_mean_of_middle_pair() {
        let s = Summary::from_secs(&[1.0, 2.0, 3.0, 100.0]).unwrap();
        assert_eq!(s.median_secs, 2.5);
    }

    /// The one median: empty has none, an odd count its middle point, an even count the mean
    /// of its two middle points, in any order; the MAD is the median of the distances to it.
    #[test]
    fn median_and_mad() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(mad(&[]), None);
        // |x - 3| = 2, 0, 0, 97 → median of 0, 0, 2, 97 = 1
        assert_eq!(mad(&[1.0, 3.0, 3.0, 100.0]), Some(1.0));
        assert_eq!(mad(&[7.0, 7.0, 7.0]), Some(0.0));
    }

    #[test]
    fn constant_sample_has_zero_spread() {
        let s = Summary::from_secs(&[0.5; 7]).unwrap();
        assert_eq!(s.stddev_secs, 0.0);
        assert_eq!(s.cv, 0.0);
        assert_eq!(s.mad_secs, 0.0);
        assert_eq!(s.mean_secs, 0.5);
    }

    #[test]
    fn rejects_too_few_and_non_positive_points() {
        assert_eq!(Summary::from_secs(&[]), Err(SampleError::TooFew(0)));
        assert_eq!(Summary::from_secs(&[1.0]), Err(SampleError::TooFew(1)));
        assert!(matches!(
            Summary::from_secs(&[1.0, 0.0]),
            Err(SampleError::NotPositive { index: 1, .. })
        ));
        assert!(matches!(
            Summary::from_secs(&[f64::NAN, 1.0]),
            Err(SampleError::NotPositive { index: 0, .. })
        ));
        assert!(matches!(
            Summary::from_secs(&[1.0, f64::INFINITY]),
            Err(SampleError::NotPositive { index: 1, .. })
        ));
    }

    #[test]
    fn running_cv_is_the_summary_s() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut points = Vec::new();
        let mut running = RunningCv::default();
        assert_eq!(running.cv(), None);
        for _ in 0..500 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = 1e-3 + (x % 1000) as f64 * 1e-6;
            points.push(v);
            running.push(v);
            if points.len() >= 2 {
                let want = Summary::from_secs(&points).unwrap().cv;
                let got = running.cv().unwrap();
                assert!((got - want).abs() <= 1e-9 * want.max(1e-12), "{got} {want}");
            }
        }
    }

    #[test]
    fn invariants_hold_on_pseudo_random_samples() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for len in 2..60 {
            let v: Vec<f64> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    1e-6 + (x % 1_000_000) as f64 * 1e-9
                })
                .collect();
            let s = Summary::from_secs(&v).unwrap();
            assert!(s.min_secs <= s.median_secs && s.median_secs <= s.max_secs);
            assert!(s.min_secs <= s.mean_secs && s.mean_secs <= s.max_secs);
            assert!(s.stddev_secs >= 0.0 && s.mad_secs >= 0.0 && s.cv >= 0.0);
        }
    }
}
