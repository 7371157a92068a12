//! Plateaus and edges of a bandwidth-against-working-set curve, found by change points, and
//! matched to the cache levels the device or OS reports.
//!
//! # Method (what users cite)
//!
//! 1. **Curve**: `y = ln(GB/s)` against `log2(bytes)`, the points sorted by working set (only
//!    finite, positive figures; the caller passes valid rows only).
//! 2. **Noise**: `σ = 1.4826 · median |y[i+1] − y[i]| / √2` (the MAD of first differences,
//!    which steps between levels barely move), at least [`NOISE_FLOOR`].
//! 3. **Segments**: optimal partitioning (dynamic programming over every split) of `y` into
//!    constant pieces, minimising the squared error plus [`PENALTY`]` · σ² · ln n` per piece.
//! 4. **Merging**: neighbouring pieces whose levels differ by less than [`MIN_STEP_RATIO`] are
//!    joined (smallest difference first), so a slope or a noisy stretch is not a level.
//! 5. **Plateaus**: pieces at least [`MIN_PLATEAU_POINTS`] points and [`MIN_PLATEAU_OCTAVES`]
//!    octaves long, and flat (a least-squares slope under [`MAX_PLATEAU_SLOPE`] per octave, or
//!    a change over the piece under [`MIN_STEP_RATIO`]); the rest are the ramps between levels
//!    (or outliers). Two plateaus with
//!    only ramps between them whose levels differ by less than [`MIN_STEP_RATIO`] are one.
//! 6. **Edge** between two plateaus: the working set where the curve crosses the geometric
//!    mean of their levels (interpolated in log–log between the points around the crossing).
//!    A cache of `C` bytes that holds the working set until it is full puts this crossing near
//!    `C`.
//! 7. **Matching**: a plateau qualifies for each reported level whose size lies within a factor
//!    of [`MATCH_FACTOR`] of the edge that ends it. Each plateau takes at most one level and
//!    each level goes to at most one plateau: the longest plateau (most steps) first, to the
//!    nearest (in octaves) of the levels it qualifies for that are left; between plateaus as
//!    long, the nearer edge first. A short run of steps (a transient dip, or the falling edge
//!    of a level) thus never takes a level from the plateau that is the level. The last
//!    plateau is `DRAM` when it starts above the largest reported cache. Anything else is
//!    unmatched, and says why ([`Unmatched`]).
//! 8. **Level**: a plateau's figure is its median step (the upper of the two middle steps of an
//!    even count), a step that was measured, not a mean of two.
//!
//! This module is pure: points in, plateaus out. It must not read rows, files or devices.

/// Smallest noise the penalty assumes, in `ln(GB/s)` (1 %): a curve measured exactly (a
/// synthetic one) still gets a finite penalty.
pub const NOISE_FLOOR: f64 = 0.01;

/// The penalty per piece, in units of `σ² · ln n` (BIC's is 2; larger keeps noise out).
pub const PENALTY: f64 = 4.0;

/// Two neighbouring levels closer than this ratio are one level (cache levels differ by 1.3×
/// or more: L1 to L2 about 2×, L2 to L3 and L3 to DRAM 1.3–3×).
pub const MIN_STEP_RATIO: f64 = 1.15;

/// Fewest points a plateau has.
pub const MIN_PLATEAU_POINTS: usize = 3;

/// Shortest span a plateau covers, in octaves of working set (4 steps of a sweep at 8 per
/// octave).
pub const MIN_PLATEAU_OCTAVES: f64 = 0.5;

/// Steepest a plateau may fall or rise, in `ln(GB/s)` per octave of working set (about 15 %
/// per octave), unless its whole change is under [`MIN_STEP_RATIO`]: a piece of a ramp
/// between two levels is steeper.
pub const MAX_PLATEAU_SLOPE: f64 = 0.15;

/// An edge matches a reported cache size within this factor either way.
pub const MATCH_FACTOR: f64 = 2.0;

/// One detected level: points `first..=last` of the sorted curve.
#[derive(Clone, Debug, PartialEq)]
pub struct Plateau {
    pub first: usize,
    pub last: usize,
    pub from_bytes: u64,
    pub to_bytes: u64,
    /// The GB/s of its median step (the upper of the two middle steps of an even count).
    pub gbps: f64,
    /// The working set of that step, bytes.
    pub median_bytes: u64,
    /// Where it ends: the edge to the next plateau, bytes; `None` for the last.
    pub edge_bytes: Option<u64>,
}

/// A curve's plateaus, in working-set order, and the points they were found in (sorted).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Detected {
    pub points: Vec<(u64, f64)>,
    pub plateaus: Vec<Plateau>,
}

/// What a plateau was matched to.
#[derive(Clone, Debug, PartialEq)]
pub enum Level {
    /// A reported cache level: its name (`L1d`, `L2`) and size in bytes.
    Cache { name: String, bytes: u64 },
    /// Beyond the largest reported cache.
    Dram,
    /// No level: why.
    Unmatched(Unmatched),
}

/// Why a plateau was matched to no level.
#[derive(Clone, Debug, PartialEq)]
pub enum Unmatched {
    /// No cache level was reported at all.
    NothingReported,
    /// Nothing reported lies within [`MATCH_FACTOR`] of its edge.
    NoneNear,
    /// The last plateau (it has no edge), and it does not start above the largest reported
    /// cache (or none was reported), so it is not called `DRAM` either.
    Last,
    /// Every level within [`MATCH_FACTOR`] of its edge went to another plateau, longer (or as
    /// long, with a nearer edge): `name` the nearest such level, `by` the index of the plateau
    /// that took it.
    Taken { name: String, by: usize },
}

/// Sum and sum of squares of `y[s..t]` from prefix sums.
fn sse(prefix: &[(f64, f64)], s: usize, t: usize) -> f64 {
    let n = (t - s) as f64;
    let sum = prefix[t].0 - prefix[s].0;
    let sq = prefix[t].1 - prefix[s].1;
    (sq - sum * sum / n).max(0.0)
}

/// The median step of `(bytes, gbps)` points by GB/s: the upper of the two middle ones of an
/// even count, so always a step that was measured. `points` must not be empty.
pub fn median_step(points: &[(u64, f64)]) -> (u64, f64) {
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| a.1.total_cmp(&b.1));
    sorted[sorted.len() / 2]
}

/// The noise of `y` ([`NOISE_FLOOR`] at least): the MAD of its first differences.
pub fn noise(y: &[f64]) -> f64 {
    let d: Vec<f64> = y.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    let Some(median) = crate::stats::median(&d) else {
        return NOISE_FLOOR;
    };
    (1.4826 * median / std::f64::consts::SQRT_2).max(NOISE_FLOOR)
}

/// Optimal partitioning of `y` into constant pieces under `penalty` per piece: the pieces'
/// bounds `[s, t)`.
pub fn segments(y: &[f64], penalty: f64) -> Vec<(usize, usize)> {
    let n = y.len();
    if n == 0 {
        return Vec::new();
    }
    let mut prefix = vec![(0.0, 0.0); n + 1];
    for (i, v) in y.iter().enumerate() {
        prefix[i + 1] = (prefix[i].0 + v, prefix[i].1 + v * v);
    }
    let mut best = vec![f64::INFINITY; n + 1];
    let mut from = vec![0usize; n + 1];
    best[0] = 0.0;
    for t in 1..=n {
        for s in 0..t {
            let c = best[s] + sse(&prefix, s, t) + penalty;
            if c < best[t] {
                best[t] = c;
                from[t] = s;
            }
        }
    }
    let mut out = Vec::new();
    let mut t = n;
    while t > 0 {
        out.push((from[t], t));
        t = from[t];
    }
    out.reverse();
    out
}

fn mean(y: &[f64], (s, t): (usize, usize)) -> f64 {
    y[s..t].iter().sum::<f64>() / (t - s) as f64
}

/// The least-squares slope of `y` against `x`.
fn slope(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxx: f64 = x.iter().map(|v| (v - mx) * (v - mx)).sum();
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    if sxx > 0.0 {
        sxy / sxx
    } else {
        0.0
    }
}

/// Joins neighbouring pieces closer than [`MIN_STEP_RATIO`], the closest pair first.
fn merge_close(y: &[f64], mut pieces: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    let threshold = MIN_STEP_RATIO.ln();
    loop {
        let closest = pieces
            .windows(2)
            .enumerate()
            .map(|(i, w)| (i, (mean(y, w[0]) - mean(y, w[1])).abs()))
            .filter(|(_, d)| *d < threshold)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let Some((i, _)) = closest else {
            return pieces;
        };
        pieces[i].1 = pieces[i + 1].1;
        pieces.remove(i + 1);
    }
}

/// The plateaus and edges of a curve of `(bytes, gbps)` points (see the module's method).
pub fn detect(points: &[(u64, f64)]) -> Detected {
    let mut points: Vec<(u64, f64)> = points
        .iter()
        .copied()
        .filter(|(b, g)| *b > 0 && g.is_finite() && *g > 0.0)
        .collect();
    points.sort_by_key(|p| p.0);
    let y: Vec<f64> = points.iter().map(|p| p.1.ln()).collect();
    let x: Vec<f64> = points.iter().map(|p| (p.0 as f64).log2()).collect();
    let n = y.len();
    if n < MIN_PLATEAU_POINTS {
        return Detected {
            points,
            plateaus: Vec::new(),
        };
    }
    let sigma = noise(&y);
    let penalty = PENALTY * sigma * sigma * (n as f64).ln().max(1.0);
    let pieces = merge_close(&y, segments(&y, penalty));
    let flat = |(s, t): (usize, usize)| {
        let span = x[t - 1] - x[s];
        let slope = slope(&x[s..t], &y[s..t]).abs();
        slope <= MAX_PLATEAU_SLOPE || slope * span < MIN_STEP_RATIO.ln()
    };
    let long = |(s, t): (usize, usize)| {
        t - s >= MIN_PLATEAU_POINTS && x[t - 1] - x[s] >= MIN_PLATEAU_OCTAVES - 1e-9 && flat((s, t))
    };
    let mut kept: Vec<(usize, usize)> = pieces.into_iter().filter(|p| long(*p)).collect();
    // Plateaus that only outliers or a wobble separated are one.
    loop {
        let close = kept
            .windows(2)
            .position(|w| (mean(&y, w[0]) - mean(&y, w[1])).abs() < MIN_STEP_RATIO.ln());
        let Some(i) = close else { break };
        kept[i].1 = kept[i + 1].1;
        kept.remove(i + 1);
    }
    let mut plateaus: Vec<Plateau> = kept
        .iter()
        .map(|&(s, t)| {
            let (median_bytes, gbps) = median_step(&points[s..t]);
            Plateau {
                first: s,
                last: t - 1,
                from_bytes: points[s].0,
                to_bytes: points[t - 1].0,
                gbps,
                median_bytes,
                edge_bytes: None,
            }
        })
        .collect();
    for i in 0..plateaus.len().saturating_sub(1) {
        let (a, b) = (&plateaus[i], &plateaus[i + 1]);
        let level = (a.gbps.ln() + b.gbps.ln()) / 2.0;
        let above = a.gbps > b.gbps;
        // The first crossing of the mid level after plateau a's last point.
        let crossing = (a.last..b.first).find(|&j| (y[j + 1] < level) == above);
        let edge_log2 = match crossing {
            Some(j) if y[j] != y[j + 1] => {
                let f = ((level - y[j]) / (y[j + 1] - y[j])).clamp(0.0, 1.0);
                x[j] + f * (x[j + 1] - x[j])
            }
            Some(j) => (x[j] + x[j + 1]) / 2.0,
            None => (x[a.last] + x[b.first]) / 2.0,
        };
        plateaus[i].edge_bytes = Some(edge_log2.exp2().round() as u64);
    }
    Detected { points, plateaus }
}

/// The level each plateau is matched to, given the reported caches as `(name, bytes)` (the
/// bytes the sweep's workers share: a per-core cache times the cores the run used); step 7 of
/// the module's method.
pub fn match_levels(plateaus: &[Plateau], reported: &[(String, u64)]) -> Vec<Level> {
    let distance = |edge: u64, size: u64| ((edge as f64) / (size as f64)).log2().abs();
    let limit = MATCH_FACTOR.log2() + 1e-9;
    // Every (plateau, level) pair within the factor, with its distance in octaves.
    let mut pairs: Vec<(f64, usize, usize)> = Vec::new();
    for (i, p) in plateaus.iter().enumerate() {
        let Some(edge) = p.edge_bytes else { continue };
        for (k, (_, size)) in reported.iter().enumerate() {
            let d = distance(edge, (*size).max(1));
            if d <= limit {
                pairs.push((d, i, k));
            }
        }
    }
    // The longest plateau first, then the nearest edge; each side used once.
    let steps = |i: usize| plateaus[i].last + 1 - plateaus[i].first;
    pairs.sort_by(|a, b| steps(b.1).cmp(&steps(a.1)).then(a.0.total_cmp(&b.0)));
    let mut taken_by: Vec<Option<usize>> = vec![None; reported.len()];
    let mut out: Vec<Option<Level>> = vec![None; plateaus.len()];
    for &(_, i, k) in &pairs {
        if out[i].is_some() || taken_by[k].is_some() {
            continue;
        }
        taken_by[k] = Some(i);
        out[i] = Some(Level::Cache {
            name: reported[k].0.clone(),
            bytes: reported[k].1,
        });
    }
    let largest = reported.iter().map(|r| r.1).max().unwrap_or(0);
    let mut out: Vec<Level> = out
        .into_iter()
        .enumerate()
        .map(|(i, level)| {
            if let Some(level) = level {
                return level;
            }
            if reported.is_empty() {
                return Level::Unmatched(Unmatched::NothingReported);
            }
            if plateaus[i].edge_bytes.is_none() {
                return Level::Unmatched(Unmatched::Last);
            }
            // The nearest level it qualified for, and who took it.
            let nearest = pairs
                .iter()
                .filter(|p| p.1 == i)
                .min_by(|a, b| a.0.total_cmp(&b.0));
            match nearest.and_then(|&(_, _, k)| Some((k, taken_by[k]?))) {
                Some((k, by)) => Level::Unmatched(Unmatched::Taken {
                    name: reported[k].0.clone(),
                    by,
                }),
                None => Level::Unmatched(Unmatched::NoneNear),
            }
        })
        .collect();
    if let Some(last) = plateaus.last() {
        if largest > 0 && last.from_bytes > largest {
            *out.last_mut().expect("one plateau at least") = Level::Dram;
        }
    }
    out
}
