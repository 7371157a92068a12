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
//! 7. **Matching**: each edge goes to the reported level whose size is nearest (in octaves)
//!    within a factor of [`MATCH_FACTOR`], each level at most once (the nearest edge wins); a
//!    plateau is the level of the edge that ends it, and the last plateau is `DRAM` when it
//!    starts above the largest reported cache. Anything else is unmatched, and said so.
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
    /// Nothing reported lies within [`MATCH_FACTOR`] of its edge.
    Unmatched,
}

/// Sum and sum of squares of `y[s..t]` from prefix sums.
fn sse(prefix: &[(f64, f64)], s: usize, t: usize) -> f64 {
    let n = (t - s) as f64;
    let sum = prefix[t].0 - prefix[s].0;
    let sq = prefix[t].1 - prefix[s].1;
    (sq - sum * sum / n).max(0.0)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
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
    let mut d: Vec<f64> = y.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    if d.is_empty() {
        return NOISE_FLOOR;
    }
    (1.4826 * median(&mut d) / std::f64::consts::SQRT_2).max(NOISE_FLOOR)
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
/// bytes the sweep's workers share: a per-core cache times the cores the run used).
pub fn match_levels(plateaus: &[Plateau], reported: &[(String, u64)]) -> Vec<Level> {
    let distance = |edge: u64, size: u64| ((edge as f64) / (size as f64)).log2().abs();
    let limit = MATCH_FACTOR.log2() + 1e-9;
    let mut out = vec![Level::Unmatched; plateaus.len()];
    // Every (edge, level) pair within the factor, nearest first; each side used once.
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
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut level_used = vec![false; reported.len()];
    let mut plateau_done = vec![false; plateaus.len()];
    for (_, i, k) in pairs {
        if plateau_done[i] || level_used[k] {
            continue;
        }
        plateau_done[i] = true;
        level_used[k] = true;
        out[i] = Level::Cache {
            name: reported[k].0.clone(),
            bytes: reported[k].1,
        };
    }
    let largest = reported.iter().map(|r| r.1).max().unwrap_or(0);
    if let Some(last) = plateaus.last() {
        if largest > 0 && last.from_bytes > largest {
            *out.last_mut().expect("one plateau at least") = Level::Dram;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A curve at `per_octave` steps from 16 KiB to `to` bytes, its GB/s falling from level to
    /// level at each `(capacity, next level)` along a logistic of `width` octaves, times
    /// `noise(i)`.
    fn curve(
        first_gbps: f64,
        steps: &[(u64, f64)],
        to: u64,
        per_octave: u32,
        width: f64,
        noise: impl Fn(usize) -> f64,
    ) -> Vec<(u64, f64)> {
        let mut out = Vec::new();
        let mut i = 0;
        loop {
            let bytes = ((16u64 << 10) as f64 * (f64::from(i) / f64::from(per_octave)).exp2())
                .round() as u64;
            if bytes > to {
                return out;
            }
            let x = (bytes as f64).log2();
            let mut log_g = first_gbps.ln();
            let mut prev = first_gbps;
            for &(cap, next) in steps {
                let t = 1.0 / (1.0 + (-((x - (cap as f64).log2()) / width)).exp());
                log_g += t * (next.ln() - prev.ln());
                prev = next;
            }
            out.push((bytes, log_g.exp() * noise(out.len())));
            i += 1;
        }
    }

    /// Deterministic noise, uniform in `1 ± amplitude`.
    fn jitter(amplitude: f64, seed: u64) -> impl Fn(usize) -> f64 {
        move |i| {
            let mut z = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed;
            z = (z ^ (z >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z ^= z >> 29;
            1.0 + amplitude * ((z % 20001) as f64 / 10000.0 - 1.0)
        }
    }

    const L1: u64 = 64 << 10;
    const L2: u64 = 2 << 20;
    const L3: u64 = 32 << 20;

    fn three_caches(noise: impl Fn(usize) -> f64) -> Vec<(u64, f64)> {
        curve(
            400.0,
            &[(L1, 150.0), (L2, 60.0), (L3, 20.0)],
            4 * L3,
            8,
            0.25,
            noise,
        )
    }

    fn reported() -> Vec<(String, u64)> {
        vec![("L1d".into(), L1), ("L2".into(), L2), ("L3".into(), L3)]
    }

    fn assert_edges_near(d: &Detected, caps: &[u64], factor: f64) {
        let edges: Vec<u64> = d.plateaus.iter().filter_map(|p| p.edge_bytes).collect();
        assert_eq!(edges.len(), caps.len(), "{:?}", d.plateaus);
        for (e, c) in edges.iter().zip(caps) {
            let r = *e as f64 / *c as f64;
            assert!(r < factor && r > 1.0 / factor, "edge {e} against {c}");
        }
    }

    #[test]
    fn four_levels_and_their_edges_on_a_clean_curve() {
        let d = detect(&three_caches(|_| 1.0));
        assert_eq!(d.plateaus.len(), 4, "{:?}", d.plateaus);
        assert_edges_near(&d, &[L1, L2, L3], 1.1);
        let levels = match_levels(&d.plateaus, &reported());
        let names: Vec<String> = levels
            .iter()
            .map(|l| match l {
                Level::Cache { name, .. } => name.clone(),
                Level::Dram => "DRAM".into(),
                Level::Unmatched => "-".into(),
            })
            .collect();
        assert_eq!(names, ["L1d", "L2", "L3", "DRAM"]);
        // The plateaus' levels are the curve's.
        let g: Vec<f64> = d.plateaus.iter().map(|p| p.gbps).collect();
        for (got, want) in g.iter().zip([400.0, 150.0, 60.0, 20.0]) {
            assert!((got / want - 1.0).abs() < 0.1, "{g:?}");
        }
    }

    #[test]
    fn noisy_curves_keep_their_levels() {
        for seed in 0..20 {
            let d = detect(&three_caches(jitter(0.05, seed)));
            assert_eq!(d.plateaus.len(), 4, "seed {seed}: {:?}", d.plateaus);
            assert_edges_near(&d, &[L1, L2, L3], 1.3);
        }
        // Coarse steps (a GPU's sweep at 2 per octave) still find the levels.
        let coarse = curve(
            3000.0,
            &[(32 << 20, 1500.0)],
            256 << 20,
            2,
            0.3,
            jitter(0.03, 7),
        );
        let d = detect(&coarse);
        assert_eq!(d.plateaus.len(), 2, "{:?}", d.plateaus);
        assert_edges_near(&d, &[32 << 20], 1.5);
    }

    #[test]
    fn no_false_edges() {
        // Flat and noisy: one level.
        let flat = curve(100.0, &[], 128 << 20, 8, 0.25, jitter(0.05, 3));
        let d = detect(&flat);
        assert_eq!(d.plateaus.len(), 1, "{:?}", d.plateaus);
        assert_eq!(d.plateaus[0].edge_bytes, None);
        // A slope of 10 % over 13 octaves is not a level.
        let sloped: Vec<(u64, f64)> = flat
            .iter()
            .enumerate()
            .map(|(i, &(b, _))| (b, 100.0 * (1.0 - 0.1 * i as f64 / flat.len() as f64)))
            .collect();
        assert_eq!(detect(&sloped).plateaus.len(), 1);
        // One wild point (a disturbed sample) and a short dip are not edges.
        let mut spiky = flat.clone();
        spiky[40].1 *= 0.3;
        spiky[70].1 *= 0.5;
        spiky[71].1 *= 0.5;
        let d = detect(&spiky);
        assert_eq!(d.plateaus.len(), 1, "{:?}", d.plateaus);
        // A small step (8 %) is below what a level change is.
        let small = curve(100.0, &[(L2, 92.0)], 128 << 20, 8, 0.25, |_| 1.0);
        assert_eq!(detect(&small).plateaus.len(), 1);
        // Too few points: nothing.
        assert!(detect(&flat[..2]).plateaus.is_empty());
        assert!(detect(&[]).plateaus.is_empty());
    }

    #[test]
    fn matching_is_one_to_one_and_within_a_factor() {
        let d = detect(&three_caches(|_| 1.0));
        // An L2 reported 4x smaller than its edge matches nothing; the rest still match.
        let far = vec![
            ("L1d".to_string(), L1),
            ("L2".to_string(), L2 / 4),
            ("L3".to_string(), L3),
        ];
        let levels = match_levels(&d.plateaus, &far);
        assert_eq!(
            levels[0],
            Level::Cache {
                name: "L1d".into(),
                bytes: L1
            }
        );
        assert_eq!(levels[1], Level::Unmatched);
        assert_eq!(levels[3], Level::Dram);
        // Nothing reported: the last plateau is not called DRAM.
        assert!(match_levels(&d.plateaus, &[])
            .iter()
            .all(|l| *l == Level::Unmatched));
        // One reported level near two edges goes to the nearer.
        let one = vec![("L2".to_string(), L2)];
        let levels = match_levels(&d.plateaus, &one);
        assert_eq!(levels.iter().filter(|l| **l != Level::Unmatched).count(), 2);
        assert!(matches!(&levels[1], Level::Cache { name, .. } if name == "L2"));
    }

    /// A plateau's figure is a step it measured: the upper middle of an even count, not the
    /// mean of the two middle steps.
    #[test]
    fn a_plateau_is_its_median_step() {
        assert_eq!(
            median_step(&[(1, 10.0), (2, 30.0), (3, 20.0), (4, 40.0)]),
            (2, 30.0)
        );
        assert_eq!(median_step(&[(1, 10.0), (2, 30.0), (3, 20.0)]), (3, 20.0));
        let points: Vec<(u64, f64)> = (0..12u64)
            .map(|i| ((16 + i) << 10, 100.0 + (i % 4) as f64))
            .collect();
        let d = detect(&points);
        assert_eq!(d.plateaus.len(), 1);
        let p = &d.plateaus[0];
        assert!(points.contains(&(p.median_bytes, p.gbps)), "{p:?}");
        assert_eq!(p.gbps, 102.0);
    }

    #[test]
    fn noise_is_the_spread_of_differences() {
        assert_eq!(noise(&[1.0, 1.0, 1.0]), NOISE_FLOOR);
        let alternating: Vec<f64> = (0..50)
            .map(|i| if i % 2 == 0 { 0.0 } else { 0.2 })
            .collect();
        assert!((noise(&alternating) - 1.4826 * 0.2 / 2f64.sqrt()).abs() < 1e-9);
        assert_eq!(segments(&[0.0, 0.0, 5.0, 5.0], 0.1), vec![(0, 2), (2, 4)]);
    }
}
