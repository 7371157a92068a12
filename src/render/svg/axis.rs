//! The ticks of the suite's plot axes, in one place: which values an axis marks and how their
//! labels read. Two scales: the roofline's log axes (1-2-5 per decade where the labels fit,
//! else every k-th decade, and the 1..9 minor grid), and the fleet strip plots' linear axis
//! (a round step, some 10 to 15 ticks whatever the range).
//!
//! Values and text only: drawing the lines and labels is the picture's ([`super`]) or the strip
//! plot's ([`crate::render::fleet`]) own business, each in its own SVG idiom.

/// The tick labels' text size, px.
pub const TICK_PX: f64 = 13.0;

/// A log axis's tick label: plain numbers (`0.01`, `2`, `1000`, `50000`), powers of ten from
/// 100 000 up (`1e5`, `5e7`); empty for a value that is not finite and positive.
pub fn log_label(v: f64) -> String {
    if !v.is_finite() || v <= 0.0 {
        return String::new();
    }
    if v >= 1e5 {
        let exp = v.log10().floor() as i32;
        let mantissa = v / 10f64.powi(exp);
        if (mantissa - 1.0).abs() < 1e-6 {
            return format!("1e{exp}");
        }
        return format!("{mantissa:.0}e{exp}");
    }
    let decimals = if v >= 1.0 {
        0
    } else {
        (-v.log10()).ceil() as usize
    };
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Tick values for a log axis from `lo` to `hi` over `length_px`: 1-2-5 in each decade where
/// their labels keep 10 px apart (each label `extent(v)` long along the axis), else every
/// decade, else every second, third… decade; at least two ticks.
pub fn log_ticks(lo: f64, hi: f64, length_px: f64, extent: impl Fn(f64) -> f64) -> Vec<f64> {
    let px = |v: f64| (v / lo).ln() / (hi / lo).ln() * length_px;
    let first = lo.log10().floor() as i32;
    let last = hi.log10().ceil() as i32;
    let within = |v: &f64| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9);
    let fits = |ticks: &[f64]| {
        ticks.len() >= 2
            && ticks
                .windows(2)
                .all(|w| px(w[1]) - px(w[0]) >= (extent(w[0]) + extent(w[1])) / 2.0 + 10.0)
    };
    let decade = |k: i32, m: f64| m * 10f64.powi(k);
    let one_two_five: Vec<f64> = (first..=last)
        .flat_map(|k| [1.0, 2.0, 5.0].map(|m| decade(k, m)))
        .filter(within)
        .collect();
    if fits(&one_two_five) {
        return one_two_five;
    }
    for step in 1..=24 {
        let ticks: Vec<f64> = (first..=last)
            .filter(|k| k.rem_euclid(step) == 0)
            .map(|k| decade(k, 1.0))
            .filter(within)
            .collect();
        if fits(&ticks) {
            return ticks;
        }
    }
    one_two_five
}

/// A log axis's minor grid lines: every 1..9 × 10^k in range, where a decade is wide enough
/// (60 px) to show them; none otherwise.
pub fn minor_ticks(lo: f64, hi: f64, length_px: f64) -> Vec<f64> {
    if length_px / (hi / lo).log10() < 60.0 {
        return Vec::new();
    }
    let first = lo.log10().floor() as i32;
    let last = hi.log10().ceil() as i32;
    (first..=last)
        .flat_map(|k| (1..10).map(move |m| f64::from(m) * 10f64.powi(k)))
        .filter(|v| *v > lo && *v < hi)
        .collect()
}

/// A linear axis's step: a round one (1, 2, 2.5 or 5 times a power of ten) that cuts `range`
/// into at most 15.
pub fn linear_step(range: f64) -> f64 {
    let raw = (range / 15.0).max(1e-6);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// Tick values for a linear axis from `lo` to `hi`: the multiples of [`linear_step`] in range,
/// 17 at most (an outlier far off widens the step, not the count).
pub fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let step = linear_step(hi - lo);
    let first = (lo / step).ceil();
    (0..=16)
        .map(|k| (first + k as f64) * step)
        .take_while(|t| *t <= hi)
        .collect()
}

/// A linear axis's tick label: three decimals at most, trailing zeros dropped (`0.95`, `1`).
pub fn linear_label(t: f64) -> String {
    let label = format!("{t:.3}");
    label
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string()
}
