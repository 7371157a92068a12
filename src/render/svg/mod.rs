//! The roofline picture: calibrations in, SVG text out. It writes every element itself (no
//! plotting library), so every text in the picture has a box the label placement knows, and
//! every text inside the plot is placed by the one rule of [`super::labels`]: no label on
//! another, on a roof line, on a point or over the border.
//!
//! What it shows: log-log axes trimmed to the data (points, ceilings and ridges, with room for
//! the roofs' names), ticks at 1-2-5 where they fit; measured ceilings solid, spec ceilings
//! dashed; one colour per memory level and per precision, the points in their precision's
//! colour and shaped by family (circle: STREAM kernel, triangle: intensity sweep, square: our
//! GEMM, plus sign: a reference implementation's GEMM); each weight shape's GEMM batch sweep
//! joined by a thin line in order of M (dashed for a reference) and named beside its largest
//! M; ridges as diamonds (solid outline: measured, dashed: spec), a shape no point has. Points
//! above their roof beyond the noise are ringed, ceilings set by a flagged row say `SUSPECT`
//! (the suspect flags' markings, as in the ceilings table). Several runs overlay
//! in the same colours, told apart by line weight, shade and marker fill (solid, hollow,
//! tinted) and by their letter, `[A]`, `[B]`, as in `compare`. Integer precisions are
//! counted in OP/s and OP/B. The legend under the plot names each run by its id and time.
//!
//! Which compute ceilings are drawn: every measured one with its spec, and the spec f64 and f32
//! ceilings even when nothing measured them, so a memory-only run still shows the sheet's roof.
//!
//! Pure: it must not read or write files; the commands do.

#[cfg(test)]
mod browser;
pub mod labels;
pub mod names;
pub mod picture;

use crate::analysis::calibration::Calibration;
use crate::analysis::roofline::{
    gemm_series, ComputeCeiling, GemmSeries, MemoryCeiling, MemoryLevel,
};
use crate::cases::ops;
use crate::cases::{Family, Precision};
use crate::render::svg::labels::{
    text_width, Anchor, Field, Label, Obstacle, Outcome, Shape, Spot, Xy, ASCENT_EM, DESCENT_EM,
};
use crate::render::svg::names::{merge, Figure, Named, Place, LABEL_PX};
use crate::render::svg::picture::{
    centred_baseline, marker_extent, point_size, run_style, wrap, Fill, Item, Legend, Mark,
    Picture, Rgb, Swatch, ABOVE_ROOF_RING, GREY, INK, SERIES_WIDTH, WARNING,
};
use crate::text::letter;
use crate::{Error, Result};

/// Width of the picture, px; its height follows from the header and legend.
pub const WIDTH: f64 = 1200.0;
/// Height of the plot area, px.
const PLOT_HEIGHT: f64 = 600.0;
/// Left edge of the plot area: room for the y tick labels and the axis title.
const PLOT_LEFT: f64 = 100.0;
const PLOT_RIGHT: f64 = WIDTH - 24.0;

/// Text sizes, px.
const TITLE_PX: f64 = 22.0;
const HEADER_PX: f64 = 13.0;
const AXIS_TITLE_PX: f64 = 15.0;
const TICK_PX: f64 = 13.0;

/// A tick label: plain numbers (`0.01`, `2`, `1000`, `50000`), powers of ten beyond a million.
pub fn tick(v: f64) -> String {
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

/// A bandwidth for labels: `1790 GB/s`.
pub fn bandwidth(gbps: f64) -> String {
    format!("{} GB/s", three_digits(gbps))
}

/// An arithmetic rate for labels: `19.5 TFLOP/s`, `850 GFLOP/s`; integer formats in `TOP/s`.
pub fn arithmetic(gflops: f64, precision: Precision) -> String {
    let op = ops(precision);
    if gflops >= 1000.0 {
        format!("{} T{op}/s", three_digits(gflops / 1000.0))
    } else {
        format!("{} G{op}/s", three_digits(gflops))
    }
}

fn three_digits(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A ridge point with two or three significant digits.
fn tick_ridge(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The dash of a reference library's GEMM sweep line.
const REFERENCE_DASH: &str = "4 3";

/// Memory levels keep their colour in every picture; DRAM is the darkest roof.
fn memory_colour(level: MemoryLevel) -> Rgb {
    match level {
        MemoryLevel::Dram => Rgb(38, 38, 38),
        MemoryLevel::L3 => Rgb(140, 86, 75),
        MemoryLevel::L2 => Rgb(122, 122, 122),
        MemoryLevel::L1 => Rgb(92, 92, 138),
    }
}

/// Precisions take these in canonical order (f64, f32, …, then the tensor formats), so the
/// precisions of one picture never share a colour unless it has more than ten.
const PRECISION_PALETTE: [Rgb; 10] = [
    Rgb(31, 119, 180),
    Rgb(214, 39, 40),
    Rgb(42, 138, 42),
    Rgb(148, 103, 189),
    Rgb(224, 104, 11),
    Rgb(194, 57, 143),
    Rgb(15, 138, 152),
    Rgb(122, 122, 0),
    Rgb(163, 59, 92),
    Rgb(75, 107, 43),
];

/// The precisions in a picture, each with its colour.
struct Colours(Vec<(Precision, Rgb)>);

impl Colours {
    fn of(cals: &[Calibration]) -> Colours {
        let mut present: Vec<Precision> = Vec::new();
        for cal in cals {
            present.extend(drawn_compute(cal).iter().map(|c| c.ceiling.precision));
            present.extend(cal.points.iter().map(|p| p.precision));
        }
        let order = |p: &Precision| Precision::ALL.iter().position(|q| q == p);
        present.sort_by_key(order);
        present.dedup();
        Colours(
            present
                .into_iter()
                .zip(PRECISION_PALETTE.iter().cycle())
                .map(|(p, c)| (p, *c))
                .collect(),
        )
    }

    fn get(&self, precision: Precision) -> Rgb {
        self.0
            .iter()
            .find(|(p, _)| *p == precision)
            .map_or(GREY, |(_, c)| *c)
    }
}

/// How a GEMM series is marked: a reference library's points as crosses, ours as squares.
fn mark_of(series: &GemmSeries<'_>) -> Mark {
    if series.reference() {
        Mark::Cross
    } else {
        Mark::Square
    }
}

/// A compute ceiling as drawn: its measured and spec figures.
struct Drawn<'a> {
    ceiling: &'a ComputeCeiling,
    measured: Option<f64>,
    spec: Option<f64>,
}

fn drawn_compute(cal: &Calibration) -> Vec<Drawn<'_>> {
    cal.compute_ceilings
        .iter()
        .filter(|c| {
            c.gflops.is_some()
                || (c.family == Family::Peak
                    && matches!(c.precision, Precision::F64 | Precision::F32)
                    && c.spec_gflops.is_some())
        })
        .map(|c| Drawn {
            ceiling: c,
            measured: c.gflops.filter(|v| good(*v)),
            spec: c.spec_gflops.filter(|v| good(*v)),
        })
        .collect()
}

/// `, SUSPECT` after the name of a ceiling set by a row the run flagged (the suspect flags), as
/// in the ceilings table.
fn suspect(cal: &Calibration, case: &Option<String>) -> &'static str {
    if case.as_deref().is_some_and(|c| cal.is_suspect(c)) {
        ", SUSPECT"
    } else {
        ""
    }
}

fn good(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

fn dram(cal: &Calibration) -> Option<&MemoryCeiling> {
    cal.memory_ceilings
        .iter()
        .find(|m| m.level == MemoryLevel::Dram)
}

/// The measured cache ceilings (L1, L2, L3) with their GB/s.
fn caches(cal: &Calibration) -> impl Iterator<Item = (&MemoryCeiling, f64)> {
    cal.memory_ceilings
        .iter()
        .filter(|m| m.level != MemoryLevel::Dram)
        .filter_map(|m| Some((m, m.gbps.filter(|b| good(*b))?)))
}

/// The highest measured and spec compute ceilings drawn for a run: where its roofs stop.
fn tops(cal: &Calibration) -> (Option<f64>, Option<f64>) {
    let computes = drawn_compute(cal);
    (
        computes.iter().filter_map(|d| d.measured).reduce(f64::max),
        computes.iter().filter_map(|d| d.spec).reduce(f64::max),
    )
}

/// Axis ranges trimmed to the data: every point, ceiling and ridge, a margin around them, room
/// right of the last ridge (`room` times its intensity: for the roofs' names where they go in
/// the plot) and above the highest roof; at least a decade each way.
fn ranges(cals: &[Calibration], room: f64) -> Result<((f64, f64), (f64, f64))> {
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    let mut ridges = Vec::new();
    for cal in cals {
        for p in &cal.points {
            xs.push(p.flop_per_byte);
            ys.push(p.gflops);
        }
        let (b, b_spec) = dram(cal).map_or((None, None), |m| (m.gbps, m.spec_gbps));
        for d in drawn_compute(cal) {
            ys.extend(d.measured);
            ys.extend(d.spec);
            ridges.extend(d.measured.zip(b).map(|(p, b)| p / b));
            ridges.extend(d.spec.zip(b_spec).map(|(p, b)| p / b));
        }
        // A cache roof shows from the left edge to where it meets the top roof.
        if let (Some(top), _) = tops(cal) {
            xs.extend(caches(cal).map(|(_, b)| top / b / 2.0));
        }
    }
    ridges.retain(|v| good(*v));
    xs.retain(|v| good(*v));
    ys.retain(|v| good(*v));
    xs.extend(&ridges);
    let lo = |v: &[f64]| v.iter().copied().reduce(f64::min);
    let hi = |v: &[f64]| v.iter().copied().reduce(f64::max);
    let (x0, x1) = match (lo(&xs), hi(&xs)) {
        (Some(a), Some(b)) => (a / 1.6, (b * 1.4).max(hi(&ridges).unwrap_or(0.0) * room)),
        _ => (0.1, 100.0),
    };
    let (x0, x1) = at_least_a_decade(x0, x1);
    if ys.is_empty() {
        // Memory roofs alone: their values across the x range.
        for cal in cals {
            for m in &cal.memory_ceilings {
                for b in [m.gbps, m.spec_gbps].into_iter().flatten() {
                    ys.extend([b * x0, b * x1]);
                }
            }
        }
        ys.retain(|v| good(*v));
    }
    let (y0, y1) = match (lo(&ys), hi(&ys)) {
        (Some(a), Some(b)) => (a / 1.6, b * 1.8),
        _ => (1.0, 1000.0),
    };
    let (y0, y1) = at_least_a_decade(y0, y1);
    // A figure no device can reach (a damaged or hand-edited file) would stretch the axes
    // past what can be drawn; say so instead.
    let sane = |lo: f64, hi: f64| good(lo) && good(hi) && hi / lo <= 1e24;
    if !sane(x0, x1) || !sane(y0, y1) {
        return Err(Error::Usage(format!(
            "cannot plot: the figures span {x0:e}..{x1:e} FLOP/byte and {y0:e}..{y1:e} GFLOP/s, \
             more than 24 decades; check the input for damaged numbers"
        )));
    }
    Ok(((x0, x1), (y0, y1)))
}

fn at_least_a_decade(lo: f64, hi: f64) -> (f64, f64) {
    if hi / lo >= 10.0 {
        (lo, hi)
    } else {
        let mid = (lo * hi).sqrt();
        (mid / 10f64.sqrt(), mid * 10f64.sqrt())
    }
}

/// Log-log mapping from data to the plot area's pixels.
struct Axes {
    x: (f64, f64),
    y: (f64, f64),
    plot: (f64, f64, f64, f64),
}

impl Axes {
    fn x_px(&self, v: f64) -> f64 {
        let (l, _, r, _) = self.plot;
        l + (v / self.x.0).ln() / (self.x.1 / self.x.0).ln() * (r - l)
    }

    fn y_px(&self, v: f64) -> f64 {
        let (_, t, _, b) = self.plot;
        b - (v / self.y.0).ln() / (self.y.1 / self.y.0).ln() * (b - t)
    }

    fn px(&self, (x, y): (f64, f64)) -> Xy {
        (self.x_px(x), self.y_px(y))
    }
}

/// Tick values for a log axis from `lo` to `hi` over `length_px`: 1-2-5 in each decade where
/// their labels keep `min_gap_px` apart (each label `extent(v)` long along the axis), else every
/// decade, else every second, third… decade; at least two ticks.
fn log_ticks(lo: f64, hi: f64, length_px: f64, extent: impl Fn(f64) -> f64) -> Vec<f64> {
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

/// Minor grid lines: every 1..9 × 10^k in range, where a decade is wide enough to show them.
fn minor_ticks(lo: f64, hi: f64, length_px: f64) -> Vec<f64> {
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

/// `2026-11-30 08:21:22 to 08:22:56 UTC`: a run's time span from its first and last rows.
fn run_time(cal: &Calibration) -> String {
    let clean = |s: &str| s.trim_end_matches('Z').replacen('T', " ", 1);
    let first = clean(&cal.run.first_utc);
    let last = clean(&cal.run.last_utc);
    match (first.is_empty(), last.is_empty()) {
        (true, true) => "time not recorded".into(),
        (false, true) => format!("{first} UTC"),
        (true, false) => format!("{last} UTC"),
        (false, false) if first == last => format!("{first} UTC"),
        (false, false) => {
            let same_day = first.get(..10) == last.get(..10);
            let end = if same_day {
                last.get(11..).unwrap_or(&last).to_string()
            } else {
                last
            };
            format!("{first} to {end} UTC")
        }
    }
}

/// Renders the roofline of one run, or several overlaid, as SVG text.
pub fn render(cals: &[Calibration]) -> Result<String> {
    Ok(picture(cals)?.to_svg())
}

/// The title, then each run's spec basis and case counts; returns where the header ends, px.
fn draw_header(items: &mut Vec<Item>, cals: &[Calibration]) -> f64 {
    let overlay = cals.len() > 1;
    let title = if overlay {
        format!("Roofline: {} runs overlaid", cals.len())
    } else {
        format!("Roofline: {}", cals[0].title())
    };
    let mut y = 12.0 + ASCENT_EM * TITLE_PX;
    for line in wrap(&title, TITLE_PX, WIDTH - 40.0) {
        items.push(Item::text(
            line,
            TITLE_PX,
            Spot::flat((20.0, y), Anchor::Start, 0.0),
            INK,
            "title",
        ));
        y += TITLE_PX * 1.25;
    }
    y += 2.0;
    for (i, cal) in cals.iter().enumerate() {
        let who = if overlay {
            format!("[{}] {}: ", letter(i), cal.title())
        } else {
            String::new()
        };
        let invalid = cal.run.cases.saturating_sub(cal.run.valid_cases);
        let invalid = if invalid > 0 {
            format!("; {invalid} invalid case(s) not plotted")
        } else {
            String::new()
        };
        let no_compute = if cal.compute_ceilings.iter().all(|c| c.gflops.is_none()) {
            "; no compute ceiling measured"
        } else {
            ""
        };
        let suspect = match cal.suspect.len() {
            0 => String::new(),
            n => format!("; {n} suspect figure(s), see the CSV's flags"),
        };
        let line = format!(
            "{who}{}; {} of {} cases valid{invalid}{no_compute}{suspect}",
            cal.spec.describe(),
            cal.run.valid_cases,
            cal.run.cases
        );
        for part in wrap(&line, HEADER_PX, WIDTH - 40.0) {
            items.push(Item::text(
                part,
                HEADER_PX,
                Spot::flat((20.0, y), Anchor::Start, 0.0),
                GREY,
                "header",
            ));
            y += HEADER_PX * 1.4;
        }
    }
    y
}

/// The legend under the plot from `top` px: the runs by id and time, then the key to what the
/// plot shows, then any name that found no room in it; returns where it ends, px.
fn draw_legend(
    items: &mut Vec<Item>,
    cals: &[Calibration],
    colours: &Colours,
    unplaced: &[(String, Rgb)],
    top: f64,
) -> f64 {
    let overlay = cals.len() > 1;
    // The legend under the plot: the runs by id and time, then the key, then any name that
    // found no room in the plot.
    let mut legend = Legend::new(PLOT_LEFT, PLOT_RIGHT, top);
    for (i, cal) in cals.iter().enumerate() {
        let style = run_style(i);
        let who = if overlay {
            format!("[{}] {} · ", letter(i), cal.device.name)
        } else {
            String::new()
        };
        let text = format!("{who}run {} · {}", cal.run.run_id, run_time(cal));
        let swatch = if overlay {
            Swatch::Run(style)
        } else {
            Swatch::None
        };
        legend.row(items, swatch, &text, INK);
    }
    legend.gap(4.0);
    // The key names only what the plot shows.
    let shows = |class: &str, dashed: bool| {
        items.iter().any(|item| match item {
            Item::Line { class: c, dash, .. } | Item::Marker { class: c, dash, .. } => {
                *c == class && dash.is_some() == dashed
            }
            Item::Text { .. } => false,
        })
    };
    let key = [
        (
            shows("roof", false),
            Swatch::Stroke(None),
            "measured ceiling",
        ),
        (
            shows("roof", true),
            Swatch::Stroke(Some("7 5")),
            "vendor spec ceiling",
        ),
        (
            shows("ridge", false),
            Swatch::Ridge(None),
            "ridge: memory roof meets compute roof",
        ),
        (
            shows("ridge", true),
            Swatch::Ridge(Some("2 2")),
            "spec ridge",
        ),
    ];
    for (shown, swatch, text) in key {
        if shown {
            legend.entry(items, swatch, text, INK);
        }
    }
    let families =
        |f: fn(&Family) -> bool| cals.iter().any(|c| c.points.iter().any(|p| f(&p.family)));
    if families(|f| *f == Family::Stream) {
        legend.entry(
            items,
            Swatch::Point(Mark::Circle),
            "STREAM kernel (flop/byte > 0)",
            INK,
        );
    }
    if families(|f| *f == Family::Intensity) {
        legend.entry(items, Swatch::Point(Mark::Triangle), "intensity sweep", INK);
    }
    let series: Vec<GemmSeries<'_>> = cals.iter().flat_map(|c| gemm_series(&c.points)).collect();
    for (reference, mark, text) in [
        (false, Mark::Square, "GEMM, ours"),
        (true, Mark::Cross, "GEMM, reference library"),
    ] {
        let of_kind = series.iter().filter(|s| s.reference() == reference);
        if of_kind.clone().next().is_none() {
            continue;
        }
        if of_kind.clone().any(|s| s.points.len() > 1) {
            let dash = reference.then_some(REFERENCE_DASH);
            let text = format!("{text}: a weight's batch sweep in order of M, named N×K at M = 1");
            legend.entry(items, Swatch::Series(mark, dash), &text, INK);
        } else {
            legend.entry(items, Swatch::Point(mark), text, INK);
        }
    }
    if cals.iter().any(|c| c.points.iter().any(|p| p.above_roof)) {
        legend.entry(
            items,
            Swatch::AboveRoof,
            "ABOVE ROOF: above its roof beyond the noise (suspect)",
            WARNING,
        );
    }
    legend.newline();
    let mut levels: Vec<MemoryLevel> = cals
        .iter()
        .flat_map(|c| c.memory_ceilings.iter())
        .filter(|m| m.gbps.is_some() || m.spec_gbps.is_some())
        .map(|m| m.level)
        .collect();
    levels.sort();
    levels.dedup();
    for level in levels {
        legend.entry(
            items,
            Swatch::Block(memory_colour(level)),
            level.as_str(),
            INK,
        );
    }
    for &(precision, colour) in &colours.0 {
        let unit = format!("{precision} ({}/s)", ops(precision));
        legend.entry(items, Swatch::Block(colour), &unit, INK);
    }
    legend.newline();
    legend.row(
        items,
        Swatch::None,
        "bytes = read + written, each element once (STREAM counting)",
        GREY,
    );
    if cals.iter().any(|c| !c.suspect.is_empty()) {
        legend.row(
            items,
            Swatch::None,
            "SUSPECT: a ceiling set by a row the run flagged (its `flags` say why); rerun on a quiet machine before trusting it",
            WARNING,
        );
    }
    if !unplaced.is_empty() {
        legend.row(
            items,
            Swatch::None,
            "No room beside their lines in the plot:",
            GREY,
        );
        for (text, colour) in unplaced {
            legend.row(items, Swatch::None, text, *colour);
        }
    }
    legend.bottom()
}

/// The grid, ticks and axis titles of the plot; returns the x title's baseline, px.
fn draw_axes(items: &mut Vec<Item>, cals: &[Calibration], axes: &Axes) -> f64 {
    let (l, t, r, b) = axes.plot;
    let (x_range, y_range) = (axes.x, axes.y);
    for v in minor_ticks(x_range.0, x_range.1, r - l) {
        let x = axes.x_px(v);
        items.push(Item::line((x, t), (x, b), Rgb(238, 238, 238), 1.0, "grid"));
    }
    for v in minor_ticks(y_range.0, y_range.1, b - t) {
        let y = axes.y_px(v);
        items.push(Item::line((l, y), (r, y), Rgb(238, 238, 238), 1.0, "grid"));
    }
    let x_ticks = log_ticks(x_range.0, x_range.1, r - l, |v| {
        text_width(&tick(v), TICK_PX)
    });
    let y_ticks = log_ticks(y_range.0, y_range.1, b - t, |_| {
        (ASCENT_EM + DESCENT_EM) * TICK_PX
    });
    for &v in &x_ticks {
        let x = axes.x_px(v);
        items.push(Item::line((x, t), (x, b), Rgb(208, 208, 208), 1.0, "grid"));
        items.push(Item::line((x, b), (x, b + 5.0), INK, 1.0, "axis"));
        items.push(Item::text(
            tick(v),
            TICK_PX,
            Spot::flat((x, b + 8.0 + ASCENT_EM * TICK_PX), Anchor::Middle, 0.0),
            INK,
            "tick",
        ));
    }
    // Rates from 10 000 GFLOP/s up read better in TFLOP/s.
    let (y_scale, y_prefix) = if y_range.1 > 1e4 {
        (1e3, "T")
    } else {
        (1.0, "G")
    };
    for &v in &y_ticks {
        let y = axes.y_px(v);
        items.push(Item::line((l, y), (r, y), Rgb(208, 208, 208), 1.0, "grid"));
        items.push(Item::line((l - 5.0, y), (l, y), INK, 1.0, "axis"));
        items.push(Item::text(
            tick(v / y_scale),
            TICK_PX,
            Spot::flat((l - 8.0, centred_baseline(y, TICK_PX)), Anchor::End, 0.0),
            INK,
            "tick",
        ));
    }
    items.push(Item::Line {
        points: vec![(l, t), (r, t), (r, b), (l, b), (l, t)],
        stroke: Rgb(120, 120, 120),
        width: 1.0,
        dash: None,
        class: "axis",
    });
    let integers = cals.iter().any(|c| {
        drawn_compute(c)
            .iter()
            .any(|d| d.ceiling.precision.is_integer())
            || c.points.iter().any(|p| p.precision.is_integer())
    });
    let (x_title, y_title) = if integers {
        (
            "Arithmetic intensity (FLOP/byte) · integer formats: OP/byte".to_string(),
            format!("Performance ({y_prefix}FLOP/s) · integer formats: {y_prefix}OP/s"),
        )
    } else {
        (
            "Arithmetic intensity (FLOP/byte)".to_string(),
            format!("Performance ({y_prefix}FLOP/s)"),
        )
    };
    let x_title_baseline =
        b + 8.0 + (ASCENT_EM + DESCENT_EM) * TICK_PX + 10.0 + ASCENT_EM * AXIS_TITLE_PX;
    items.push(Item::text(
        x_title,
        AXIS_TITLE_PX,
        Spot::flat(((l + r) / 2.0, x_title_baseline), Anchor::Middle, 0.0),
        INK,
        "axis-title",
    ));
    let widest_y_tick = y_ticks
        .iter()
        .map(|v| text_width(&tick(*v / y_scale), TICK_PX))
        .fold(0.0, f64::max);
    items.push(Item::text(
        y_title,
        AXIS_TITLE_PX,
        Spot {
            at: (
                l - 8.0 - widest_y_tick - 10.0 - DESCENT_EM * AXIS_TITLE_PX,
                (t + b) / 2.0,
            ),
            anchor: Anchor::Middle,
            angle_deg: -90.0,
            cost: 0.0,
            leader: None,
        },
        INK,
        "axis-title",
    ));
    x_title_baseline
}

/// Lays out the whole picture: the roofs' names beside their lines in the plot where they all
/// find room, else in a column right of the plot.
pub(crate) fn picture(cals: &[Calibration]) -> Result<Picture> {
    let plain = layout(cals, None)?;
    if plain.unplaced == 0 {
        return Ok(plain);
    }
    // A column as wide as the widest name, and tall enough to stack every name.
    let column = Column {
        width: (plain.widest_roof_name + COLUMN_LEADS + 12.0).min(480.0),
        height: PLOT_HEIGHT.max(plain.roof_names as f64 * (LABEL_PX * 1.5) + 60.0),
    };
    let column = layout(cals, Some(column))?;
    Ok(if column.unplaced <= plain.unplaced {
        column
    } else {
        plain
    })
}

/// Width, px, between the plot and the column of names: room for the leader lines to fan out.
const COLUMN_LEADS: f64 = 36.0;

/// The column of roofs' names right of the plot, px, and the plot's height beside it.
#[derive(Clone, Copy, Debug)]
struct Column {
    width: f64,
    height: f64,
}

/// Lays out the picture, the roofs' names in the plot or in a column right of it.
fn layout(cals: &[Calibration], column: Option<Column>) -> Result<Picture> {
    let column_px = column.map_or(0.0, |c| c.width);
    let plot_height = column.map_or(PLOT_HEIGHT, |c| c.height);
    if cals.is_empty() {
        return Err(Error::Usage("nothing to plot: no calibration given".into()));
    }
    let overlay = cals.len() > 1;
    let mut items = Vec::new();

    let y = draw_header(&mut items, cals);

    // The plot area, its grid, ticks and axis titles.
    let top = y + 8.0;
    let plot = (PLOT_LEFT, top, PLOT_RIGHT - column_px, top + plot_height);
    let (l, t, r, b) = plot;
    // Names in the plot need its right part; in a column beside it, much less.
    let room = if column_px > 0.0 { 2.5 } else { 8.0 };
    let (x_range, y_range) = ranges(cals, room)?;
    let axes = Axes {
        x: x_range,
        y: y_range,
        plot,
    };
    let x_title_baseline = draw_axes(&mut items, cals, &axes);

    // Roofs, ridges and points; the labels to place, and what they must keep clear of.
    let colours = Colours::of(cals);
    let mut obstacles: Vec<Obstacle> = Vec::new();
    let mut roof_names: Vec<Named> = Vec::new();
    let mut memory_names: Vec<Named> = Vec::new();
    // Each ridge's name, and the index of its roof's name in `roof_names`.
    let mut ridge_names: Vec<(Named, usize)> = Vec::new();
    let mut series_names: Vec<Named> = Vec::new();
    let mut markers: Vec<Item> = Vec::new();
    let mut anything = false;
    let (x0, x1) = x_range;
    let (y0, y1) = y_range;
    for (i, cal) in cals.iter().enumerate() {
        let style = run_style(i);
        let run = overlay.then(|| letter(i));
        let (top_measured, top_spec) = tops(cal);
        let (b_measured, b_spec) = dram(cal).map_or((None, None), |m| {
            (
                m.gbps.filter(|v| good(*v)),
                m.spec_gbps.filter(|v| good(*v)),
            )
        });

        // Memory roofs: y = b·x, from where they enter the plot to where they meet the highest
        // compute roof (or leave the plot).
        // (level, GB/s, its figure in the name, where the roof stops, measured?)
        let mut memory: Vec<(MemoryLevel, f64, Figure, Option<f64>, bool)> = Vec::new();
        if let Some(m) = dram(cal) {
            let case = m.case.as_deref().unwrap_or("");
            let above = if m.above_spec { ", ABOVE SPEC" } else { "" };
            let suspect = suspect(cal, &m.case);
            if let Some(bw) = b_measured {
                let tail = format!(" ({case}){above}{suspect}");
                let figure = Figure::new(run.clone(), "DRAM", &bandwidth(bw), tail);
                memory.push((MemoryLevel::Dram, bw, figure, top_measured, true));
            }
            if let Some(bw) = b_spec {
                let figure = Figure::new(run.clone(), "DRAM spec", &bandwidth(bw), "");
                memory.push((MemoryLevel::Dram, bw, figure, top_spec, false));
            }
        }
        for (m, bw) in caches(cal) {
            let case = m.case.as_deref().unwrap_or("");
            let above = if m.above_spec { ", ABOVE SPEC" } else { "" };
            let tail = format!(" ({case}){above}{}", suspect(cal, &m.case));
            let figure = Figure::new(run.clone(), m.level.as_str(), &bandwidth(bw), tail);
            memory.push((m.level, bw, figure, top_measured, true));
        }
        for (level, bw, figure, roof_top, measured) in memory {
            let enter = x0.max(y0 / bw);
            let leave = x1
                .min(y1 / bw)
                .min(roof_top.map_or(f64::INFINITY, |p| p / bw));
            if enter >= leave {
                continue;
            }
            anything = true;
            let colour = memory_colour(level).shade(style.shade);
            let width = if level == MemoryLevel::Dram && measured {
                2.6
            } else {
                1.8
            };
            let (a, z) = (axes.px((enter, bw * enter)), axes.px((leave, bw * leave)));
            items.push(Item::Line {
                points: vec![a, z],
                stroke: colour,
                width: width * style.line_scale,
                dash: (!measured).then_some("7 5"),
                class: "roof",
            });
            obstacles.push(Obstacle {
                shape: Shape::segment(a, z),
                crossable: true,
            });
            let spec = if measured { "" } else { " spec" };
            memory_names.push(Named {
                kind: format!("memory{spec}"),
                figures: vec![figure],
                place: Place::Along {
                    a,
                    z,
                    prefer_below: measured && level == MemoryLevel::Dram,
                },
                colour,
            });
        }

        // Compute roofs: from where the DRAM roof meets them to the right edge, named near their
        // right end; a ridge marker where they meet, labelled beside it.
        for d in drawn_compute(cal) {
            let name = d.ceiling.label();
            let precision = d.ceiling.precision;
            let colour = colours.get(precision).shade(style.shade);
            for (value, bw, measured) in [(d.measured, b_measured, true), (d.spec, b_spec, false)] {
                let Some(p) = value else { continue };
                anything = true;
                let rate = arithmetic(p, precision);
                let above = if measured && d.ceiling.above_spec {
                    ", ABOVE SPEC"
                } else {
                    ""
                };
                let ridge = bw.map(|bw| p / bw).filter(|x| *x >= x0 && *x <= x1);
                let ridge_figure = ridge.map(|x| format!("{} {}/B", tick_ridge(x), ops(precision)));
                // A spec ridge is named in its roof's name; a measured one beside its marker
                // where there is room (else it folds into the name too).
                let (stem, tail) = if measured {
                    (
                        name.clone(),
                        format!("{above}{}", suspect(cal, &d.ceiling.case)),
                    )
                } else {
                    let not = if d.measured.is_none() {
                        ", not measured"
                    } else {
                        ""
                    };
                    let ridge = ridge_figure
                        .as_ref()
                        .map_or_else(String::new, |r| format!(", ridge {r}"));
                    (format!("{name} spec"), format!("{not}{ridge}"))
                };
                let kind = if measured {
                    "compute measured"
                } else {
                    "compute spec"
                };
                let start = ridge.unwrap_or(x0);
                let (a, z) = (axes.px((start, p)), axes.px((x1, p)));
                items.push(Item::Line {
                    points: vec![a, z],
                    stroke: colour,
                    width: if measured { 2.6 } else { 1.8 } * style.line_scale,
                    dash: (!measured).then_some("7 5"),
                    class: "roof",
                });
                obstacles.push(Obstacle {
                    shape: Shape::segment(a, z),
                    crossable: true,
                });
                let name_index = roof_names.len();
                roof_names.push(Named {
                    kind: kind.to_string(),
                    figures: vec![Figure::new(run.clone(), stem, &rate, tail)],
                    place: Place::RoofEnd {
                        a,
                        z,
                        measured,
                        column: (column_px > 0.0).then_some(r + COLUMN_LEADS),
                    },
                    colour,
                });
                if let Some(x) = ridge {
                    let at = axes.px((x, p));
                    let size = 6.5;
                    markers.push(Item::Marker {
                        mark: Mark::Diamond,
                        at,
                        size,
                        colour,
                        fill: Fill::Hollow,
                        dash: (!measured).then_some("2 2"),
                        class: "ridge",
                    });
                    obstacles.push(Obstacle {
                        shape: marker_extent(at, size),
                        crossable: false,
                    });
                    if let (true, Some(figure)) = (measured, &ridge_figure) {
                        ridge_names.push((
                            Named {
                                kind: "ridge".into(),
                                figures: vec![Figure::new(run.clone(), "ridge", figure, "")],
                                place: Place::Beside { at, size, measured },
                                colour,
                            },
                            name_index,
                        ));
                    }
                }
            }
        }

        // GEMM batch sweeps: a thin line through each weight's points in order of M (dashed
        // for a reference library's), named beside its largest M; the points are drawn below.
        let mut marks: Vec<(&roofprobe_calibration::Point, Mark)> = Vec::new();
        for series in gemm_series(&cal.points) {
            let colour = colours.get(series.precision).shade(style.shade);
            let px: Vec<Xy> = series
                .points
                .iter()
                .map(|p| axes.px((p.flop_per_byte, p.gflops)))
                .collect();
            marks.extend(series.points.iter().map(|p| (*p, mark_of(&series))));
            let (Some((n, k)), [first, .., _]) = (series.weight, &px[..]) else {
                continue;
            };
            items.push(Item::Line {
                points: px.clone(),
                stroke: colour,
                width: SERIES_WIDTH * style.line_scale,
                dash: series.reference().then_some(REFERENCE_DASH),
                class: "series",
            });
            for pair in px.windows(2) {
                obstacles.push(Obstacle {
                    shape: Shape::segment(pair[0], pair[1]),
                    crossable: true,
                });
            }
            // Ours are named, by weight, at M = 1 (where the sweeps lie apart, along the DRAM
            // roof; at large M they crowd under the compute roof); a reference's sweep of the
            // same weight runs beside it, dashed.
            if series.reference() {
                continue;
            }
            series_names.push(Named {
                kind: format!("series {}", series.precision),
                figures: vec![Figure {
                    run: run.clone(),
                    stem: "N×K".into(),
                    value: format!("{n}×{k}"),
                    unit: String::new(),
                    tail: String::new(),
                }],
                place: Place::SeriesEnd {
                    at: *first,
                    size: point_size(mark_of(&series)),
                },
                colour,
            });
        }
        marks.extend(cal.points.iter().filter(|p| p.family != Family::Gemm).map(
            |p| match p.family {
                Family::Stream => (p, Mark::Circle),
                _ => (p, Mark::Triangle),
            },
        ));

        // Measurement points, in their precision's colour, shaped by family.
        for (p, mark) in marks {
            if !good(p.flop_per_byte) || !good(p.gflops) {
                continue;
            }
            let at = axes.px((p.flop_per_byte, p.gflops));
            let size = point_size(mark);
            markers.push(Item::Marker {
                mark,
                at,
                size,
                colour: colours.get(p.precision).shade(style.shade),
                fill: style.fill,
                dash: None,
                class: "point",
            });
            obstacles.push(Obstacle {
                shape: marker_extent(at, size),
                crossable: false,
            });
            // A point above its roof beyond the noise is suspect (the suspect flag `above_roof`): a
            // ring around it, which the legend calls ABOVE ROOF.
            if p.above_roof {
                markers.push(Item::Marker {
                    mark: Mark::Circle,
                    at,
                    size: ABOVE_ROOF_RING,
                    colour: WARNING,
                    fill: Fill::Ring,
                    dash: None,
                    class: "above-roof",
                });
                obstacles.push(Obstacle {
                    shape: marker_extent(at, ABOVE_ROOF_RING),
                    crossable: false,
                });
            }
            anything = true;
        }
    }
    items.extend(markers);

    // Place the labels: roofs' names first (they name the lines), then the memory roofs', then
    // the ridges', which fold into their roof's name where nothing is clear. Roofs of several
    // runs drawn on top of each other share a name.
    let (roof_names, roof_carrier) = merge(roof_names);
    let (memory_names, _) = merge(memory_names);
    let (ridges, roofs_of_ridges): (Vec<Named>, Vec<usize>) = ridge_names.into_iter().unzip();
    let (ridges, ridge_carrier) = merge(ridges);
    let (series_names, _) = merge(series_names);
    // Roofs' names from the top roof down: each then takes the nearest free place, so names
    // stacked in a column keep the order of their lines and their leader lines never cross.
    let mut order: Vec<usize> = (0..roof_names.len()).collect();
    let height = |n: &Named| match n.place {
        Place::RoofEnd { z, .. } => z.1,
        _ => 0.0,
    };
    order.sort_by(|&i, &j| height(&roof_names[i]).total_cmp(&height(&roof_names[j])));
    let mut labels: Vec<Label> = Vec::new();
    let mut named: Vec<&Named> = Vec::new();
    for n in order.iter().map(|&i| &roof_names[i]).chain(&memory_names) {
        labels.push(n.label());
        named.push(n);
    }
    for (k, n) in ridges.iter().enumerate() {
        let mut label = n.label();
        // The name of the roof of the first ridge this name carries.
        let first = ridge_carrier.iter().position(|&c| c == k);
        let roof = first.map(|r| roof_carrier[roofs_of_ridges[r]]);
        label.fold_into = roof.and_then(|roof| order.iter().position(|&i| i == roof));
        labels.push(label);
        named.push(n);
    }
    // The GEMM sweeps' names last: beside their last point, else joined to it by a leader line,
    // else listed under the legend.
    for n in &series_names {
        labels.push(n.label());
        named.push(n);
    }
    let label_border = (l, t, r + column_px, b);
    let roof_name_count = roof_names.len();
    let widest_roof_name = roof_names
        .iter()
        .map(|n| text_width(&n.text(), LABEL_PX))
        .fold(0.0, f64::max);
    let field = Field {
        border: label_border,
        obstacles,
    };
    let mut unplaced: Vec<(String, Rgb)> = Vec::new();
    for (outcome, p) in labels::place(&labels, &field).into_iter().zip(named) {
        match outcome {
            Outcome::Placed(placed) => {
                if let Some((from, to)) = placed.leader {
                    items.push(Item::line(from, to, p.colour, 0.8, "leader"));
                }
                items.push(Item::text(
                    placed.text,
                    placed.size_px,
                    placed.spot,
                    p.colour,
                    "label",
                ));
            }
            Outcome::Folded { .. } => {}
            Outcome::Unplaced { text } => unplaced.push((text, p.colour)),
        }
    }
    if !anything {
        items.push(Item::text(
            "no valid measurement to plot",
            24.0,
            Spot::flat(
                ((l + r) / 2.0, centred_baseline((t + b) / 2.0, 24.0)),
                Anchor::Middle,
                0.0,
            ),
            WARNING,
            "label",
        ));
    }

    let top = x_title_baseline + DESCENT_EM * AXIS_TITLE_PX + 14.0;
    let bottom = draw_legend(&mut items, cals, &colours, &unplaced, top);
    Ok(Picture {
        width: WIDTH,
        height: bottom + 12.0,
        label_border,
        unplaced: unplaced.len(),
        widest_roof_name,
        roof_names: roof_name_count,
        items,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analysis::calibration::FromRecords;
    use crate::analysis::roofline::tests::{row, synthetic_run};
    use crate::results::record::Record;

    #[test]
    fn ticks_and_rates() {
        assert_eq!(tick(0.01), "0.01");
        assert_eq!(tick(0.05), "0.05");
        assert_eq!(tick(1.0), "1");
        assert_eq!(tick(20.0), "20");
        assert_eq!(tick(10_000.0), "10000");
        assert_eq!(tick(100_000.0), "1e5");
        assert_eq!(tick(1e7), "1e7");
        assert_eq!(tick(5e7), "5e7");
        assert_eq!(tick(f64::NAN), "");
        assert_eq!(bandwidth(23.24), "23.2 GB/s");
        assert_eq!(arithmetic(19_500.0, Precision::F32), "19.5 TFLOP/s");
        assert_eq!(arithmetic(850.0, Precision::F64), "850 GFLOP/s");
        assert_eq!(arithmetic(624_000.0, Precision::S8S32), "624 TOP/s");
        assert_eq!(arithmetic(474.0, Precision::I32), "474 GOP/s");
    }

    #[test]
    fn log_ticks_fit_their_labels() {
        let width = |v: f64| text_width(&tick(v), TICK_PX);
        // four decades over 1000 px: 1-2-5
        let t = log_ticks(0.03, 330.0, 1000.0, width);
        assert_eq!(t[..4], [0.05, 0.1, 0.2, 0.5]);
        assert_eq!(*t.last().unwrap(), 200.0);
        // twenty decades over 300 px: every few decades, never crowded
        let t = log_ticks(1e-3, 1e17, 300.0, width);
        assert!(t.len() >= 2 && t.len() <= 8, "{t:?}");
        assert!(t.windows(2).all(|w| w[1] / w[0] >= 10.0));
    }

    #[test]
    fn long_lines_wrap_and_long_words_are_cut() {
        let lines = wrap("aaa bbb ccc", 12.0, text_width("aaa bbb", 12.0));
        assert_eq!(lines, ["aaa bbb", "ccc"]);
        let word = "x".repeat(200);
        let lines = wrap(&word, 12.0, 300.0);
        assert!(lines.len() > 1);
        assert!(lines.iter().all(|l| text_width(l, 12.0) <= 300.0));
        assert_eq!(lines.concat(), word);
    }

    fn cal_of(records: &[Record]) -> Calibration {
        Calibration::from_records(records, None).unwrap()
    }

    fn cal() -> Calibration {
        cal_of(&synthetic_run())
    }

    /// A GPU-like run, synthetic (no measurement): STREAM f32 and f64, L1 and L2, every ALU
    /// peak and tensor format the A100's sheet has a figure for, and f32, f64 and i32 intensity
    /// sweeps under the roof; `gbps` and `gflops` scale the DRAM roof and the f32 peak.
    pub(crate) fn gpu_like_run(
        device: &str,
        capability: &str,
        sms: u32,
        gbps: f64,
        gflops: f64,
    ) -> Vec<Record> {
        let n: u64 = 1 << 24;
        let secs = |bytes: u64, rate_gbps: f64| bytes as f64 / (rate_gbps * 1e9);
        let mut rows = Vec::new();
        for (precision, size) in [(Precision::F32, 4u64), (Precision::F64, 8)] {
            for (kernel, arrays, flops, efficiency) in [
                ("copy", 2, 0, 0.92),
                ("scale", 2, 1, 0.93),
                ("add", 3, 1, 0.95),
                ("triad", 3, 2, 0.96),
                ("dot", 2, 2, 0.90),
            ] {
                let bytes = arrays * size * n;
                rows.push(row(
                    Family::Stream,
                    kernel,
                    precision,
                    None,
                    (bytes, flops * n),
                    secs(bytes, gbps * efficiency),
                    true,
                ));
            }
        }
        for (kernel, kib, factor) in [("l1", 64, 12.0), ("l2", 20_480, 3.4)] {
            let bytes = 1u64 << 32;
            rows.push(row(
                Family::Cache,
                kernel,
                Precision::I32,
                Some(crate::cases::Param::Count(kib)),
                (bytes, 0),
                secs(bytes, gbps * factor),
                true,
            ));
        }
        // Rates relative to the f32 peak.
        for (family, precision, share) in [
            (Family::Peak, Precision::F64, 0.5),
            (Family::Peak, Precision::F32, 1.0),
            (Family::Peak, Precision::F16x2, 1.9),
            (Family::Peak, Precision::I32, 0.97),
            (Family::Tensor, Precision::F16F32, 15.0),
            (Family::Tensor, Precision::Bf16F32, 14.8),
            (Family::Tensor, Precision::Tf32F32, 7.6),
            (Family::Tensor, Precision::S8S32, 30.0),
            (Family::Tensor, Precision::F64F64, 1.0),
        ] {
            let flops = 1u64 << 44;
            rows.push(row(
                family,
                "fma",
                precision,
                None,
                (0, flops),
                flops as f64 / (gflops * share * 1e9),
                true,
            ));
        }
        for (precision, size, share) in [
            (Precision::F32, 4u64, 1.0),
            (Precision::F64, 8, 0.5),
            (Precision::I32, 4, 0.97),
        ] {
            for k in [1u32, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024] {
                let bytes = 2 * size * n;
                let flops = 2 * u64::from(k) * n;
                let roof = crate::analysis::roofline::attainable_gflops(
                    flops as f64 / bytes as f64,
                    gbps,
                    gflops * share,
                );
                // 70 to 95 % of the roof, a little different for each k
                let fraction = 0.7 + 0.25 * f64::from(k % 7) / 6.0;
                rows.push(row(
                    Family::Intensity,
                    "fma",
                    precision,
                    Some(crate::cases::Param::Count(k)),
                    (bytes, flops),
                    flops as f64 / (roof * fraction * 1e9),
                    true,
                ));
            }
        }
        let slug: String = device
            .to_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        for r in &mut rows {
            r.device_name = device.into();
            r.compute_capability = capability.into();
            r.units = sms;
            r.run_id = format!("lab-cuda0-{slug}-20260101T000000Z");
        }
        rows
    }

    fn a100() -> Calibration {
        cal_of(&gpu_like_run(
            "NVIDIA A100-SXM4-80GB",
            "8.0",
            108,
            1560.0,
            18_700.0,
        ))
    }

    fn h100() -> Calibration {
        cal_of(&gpu_like_run(
            "NVIDIA H100 80GB HBM3",
            "9.0",
            132,
            2900.0,
            60_000.0,
        ))
    }

    /// A real run in results/ (this repository's host runs).
    pub(crate) fn real(stamp: &str) -> Calibration {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("results/vm-host-amd-epyc-{stamp}.csv"));
        cal_of(&crate::results::record::read_csv(&path).unwrap())
    }

    /// Every picture the readability tests look at: the real host runs alone and overlaid, and
    /// the synthetic GPU-like ones.
    pub(crate) fn pictures() -> Vec<(&'static str, Vec<Calibration>)> {
        vec![
            ("host-single", vec![real("20261130T082122Z")]),
            (
                "host-overlay",
                vec![real("20261130T081941Z"), real("20261130T082122Z")],
            ),
            ("gpu-single", vec![a100()]),
            ("gpu-overlay", vec![a100(), h100()]),
            ("gpu-overlay-same-device", vec![a100(), a100()]),
            ("a100-minimal", vec![cal()]),
            ("gpu-suspect", vec![suspect_a100()]),
            ("gpu-gemm", vec![with_gemm(a100_rows(), 1560.0, 18_700.0)]),
            (
                "gpu-gemm-overlay",
                vec![
                    with_gemm(a100_rows(), 1560.0, 18_700.0),
                    with_gemm(h100_rows(), 2900.0, 60_000.0),
                ],
            ),
        ]
    }

    fn a100_rows() -> Vec<Record> {
        gpu_like_run("NVIDIA A100-SXM4-80GB", "8.0", 108, 1560.0, 18_700.0)
    }

    fn h100_rows() -> Vec<Record> {
        gpu_like_run("NVIDIA H100 80GB HBM3", "9.0", 132, 2900.0, 60_000.0)
    }

    /// A GPU-like run with the GEMM rows a CUDA plan gives a large device, synthetic (no
    /// measurement): the square sweep in bf16.f32 and f16.f32 and the bf16.f32 batch sweep of
    /// every Llama weight, cuBLAS before ours on each shape, each at a share of its roof (the
    /// DRAM roof, and the bf16 tensor peak: 14.8 × the f32 peak `gflops`, as in
    /// [`gpu_like_run`]).
    fn with_gemm(mut rows: Vec<Record>, gbps: f64, gflops: f64) -> Calibration {
        use crate::cases::gemm;
        let first = rows[0].clone();
        let limits = gemm::Limits {
            usable_bytes: 60 << 30,
            max_matrix_bytes: None,
            max_flops: 1e14,
        };
        for p in gemm::TENSOR_PRECISIONS {
            let batch = p == Precision::Bf16F32;
            for case in gemm::cases(gemm::GPU_OURS, Some(gemm::GPU_REFERENCE), p, &limits, batch) {
                let shape = gemm::shape_of(&case).unwrap();
                let intensity = case.work.intensity().unwrap();
                let roof =
                    crate::analysis::roofline::attainable_gflops(intensity, gbps, gflops * 14.8);
                // cuBLAS near the roof, ours a little under it, both lower for small products
                let small = (shape.flops() as f64 / 1e12).min(1.0).powf(0.15);
                let share = if case.kernel == gemm::GPU_OURS {
                    0.7
                } else {
                    0.85
                } * small;
                let mut r = crate::analysis::roofline::tests::gemm_row(
                    &case.kernel,
                    p,
                    shape,
                    roof * share,
                    true,
                );
                r.run_id.clone_from(&first.run_id);
                r.device_name.clone_from(&first.device_name);
                r.compute_capability.clone_from(&first.compute_capability);
                r.units = first.units;
                r.ratio_to_reference = crate::run::runner::ratio_to_reference(&r, &rows);
                rows.push(r);
            }
        }
        cal_of(&rows)
    }

    /// The GPU-like A100 run with suspect flags on its DRAM, f32 and tensor rows (names say
    /// SUSPECT) and its f32 sweep points above their roof (rings).
    fn suspect_a100() -> Calibration {
        let mut rows = gpu_like_run("NVIDIA A100-SXM4-80GB", "8.0", 108, 1560.0, 18_700.0);
        for r in &mut rows {
            let flagged = (r.family == Family::Stream && r.kernel == "triad")
                || (r.family == Family::Peak && r.precision == Precision::F32)
                || r.family == Family::Tensor;
            if flagged {
                r.flags = "high_cv(12.3%)".into();
            }
        }
        let mut c = cal_of(&rows);
        for p in &mut c.points {
            p.above_roof = p.family == Family::Intensity && p.precision == Precision::F32;
        }
        c
    }

    /// What is wrong with a picture, in words: texts that touch each other or leave the
    /// picture, labels off the plot, texts on a point, a ridge or a roof line.
    pub(crate) fn readability_faults(p: &Picture) -> Vec<String> {
        let mut faults = Vec::new();
        let texts = p.text_boxes();
        let text_shapes: Vec<Shape> = texts.iter().map(|(_, _, s)| s.clone()).collect();
        for (i, j) in labels::collisions(&text_shapes, 1.0) {
            faults.push(format!(
                "{} `{}` touches {} `{}`",
                texts[i].0, texts[i].1, texts[j].0, texts[j].1
            ));
        }
        // Leader lines may fork from nearby roofs' ends, but never touch a text.
        for item in &p.items {
            if let Item::Line {
                points,
                class: "leader",
                ..
            } = item
            {
                let leader = Shape(points.clone());
                for (class, text, shape) in &texts {
                    if !leader.apart(shape, 1.0) {
                        faults.push(format!("leader {points:?} touches {class} `{text}`"));
                    }
                }
            }
        }
        let (l, t, r, b) = p.label_border;
        for (class, text, shape) in &texts {
            let (sl, st, sr, sb) = shape.bounds();
            if sl < 0.0 || st < 0.0 || sr > p.width || sb > p.height {
                faults.push(format!("{class} `{text}` leaves the picture"));
            }
            if *class == "label" && (sl < l || st < t || sr > r || sb > b) {
                faults.push(format!("label `{text}` leaves the plot"));
            }
            for item in &p.items {
                let hit = match item {
                    Item::Marker {
                        at,
                        size,
                        class: "point" | "ridge" | "above-roof",
                        ..
                    } => !marker_extent(*at, *size).apart(shape, 1.0),
                    Item::Line {
                        points,
                        class: "roof" | "series",
                        ..
                    } => points
                        .windows(2)
                        .any(|w| !Shape::segment(w[0], w[1]).apart(shape, 1.0)),
                    _ => false,
                };
                if hit {
                    faults.push(format!("{class} `{text}` on {item:?}"));
                }
            }
        }
        faults
    }

    /// The test: no text on another, on a point, a ridge or a roof, or off the plot, in
    /// every picture (the layout's own boxes; the browser's are checked in `report::browser`).
    /// Every roof is named in the plot or the column beside it; only in the crowded overlay of
    /// two GPUs, and where GEMM points crowd the ridges, may ridges be listed under the legend
    /// instead; a GEMM sweep's name only in the overlay of two GPUs' full GEMM sweeps.
    #[test]
    fn no_text_overlaps_in_any_picture() {
        for (name, cals) in pictures() {
            let p = picture(&cals).unwrap();
            let faults = readability_faults(&p);
            assert!(faults.is_empty(), "{name}:\n{}", faults.join("\n"));
            let legend: Vec<&str> = p
                .text_boxes()
                .into_iter()
                .filter(|(class, ..)| *class == "legend")
                .map(|(_, text, _)| text)
                .collect();
            let listed = legend
                .iter()
                .position(|t| t.starts_with("No room beside"))
                .map_or(&[][..], |k| &legend[k + 1..]);
            assert_eq!(listed.len(), p.unplaced, "{name}");
            // GEMM points crowd the ridges too: there a ridge may be listed as well
            if name != "gpu-overlay" && !name.starts_with("gpu-gemm") {
                assert!(listed.is_empty(), "{name}: {listed:?}");
            }
            for text in listed {
                let what = text.trim_start_matches(|c: char| "[],AB ".contains(c));
                let sweep = name == "gpu-gemm-overlay" && what.starts_with("N×K ");
                assert!(
                    what.starts_with("ridge ") || sweep,
                    "{name}: `{text}` is not a ridge"
                );
            }
        }
    }

    #[test]
    fn the_svg_says_what_it_shows() {
        let svg = render(&[cal()]).unwrap();
        assert!(svg.starts_with("<svg"));
        for text in [
            "Roofline: NVIDIA A100-SXM4-80GB (cuda:0) on lab, 2026-01-01",
            "Arithmetic intensity (FLOP/byte)",
            "Performance (TFLOP/s)",
            "DRAM 1500 GB/s (stream/triad/f32)",
            "DRAM spec 2039 GB/s",
            "f32 15.0 TFLOP/s",
            "f32 spec 19.5 TFLOP/s",
            "f64 spec 9.70 TFLOP/s, not measured",
            "ridge 10.0 FLOP/B",
            "spec sheet &quot;A100 80GB SXM4&quot;",
            "intensity sweep",
            "run lab-cuda0-nvidia-a100-sxm4-80gb-20260101T000000Z · 2026-01-01 00:00:00 UTC",
        ] {
            assert!(svg.contains(text), "missing `{text}`");
        }
        insta::assert_snapshot!("roofline_one_device", svg);
    }

    /// Integer formats are counted in operations: their roofs say OP/s, their ridges OP/B, and
    /// the axes say so; float formats keep FLOP.
    #[test]
    fn integer_formats_say_op_not_flop() {
        let p = picture(&[a100()]).unwrap();
        let svg = p.to_svg();
        for text in [
            "tensor s8.s32 ",
            " TOP/s",
            "integer formats: OP/byte",
            "integer formats: TOP/s",
            "i32 (OP/s)",
        ] {
            assert!(svg.contains(text), "missing `{text}`");
        }
        let mut integer_names = 0;
        for (class, text, _) in p.text_boxes() {
            if class == "label" && (text.contains("s8.s32") || text.starts_with("i32 ")) {
                integer_names += 1;
                assert!(text.contains("OP/") && !text.contains("FLOP"), "{text}");
            }
            if class == "label" && text.starts_with("f32 ") {
                assert!(text.contains("FLOP/s"), "{text}");
            }
        }
        assert!(integer_names >= 2, "{svg}");
        // An integer ridge: its roof's precision decides the word.
        let ridge = |precision| {
            let cal = a100();
            let c = cal
                .compute(Family::Peak, precision)
                .unwrap()
                .gflops
                .unwrap();
            format!(
                "{} {}/B",
                tick_ridge(c / cal.dram_gbps().unwrap()),
                ops(precision)
            )
        };
        assert!(ridge(Precision::I32).ends_with(" OP/B"));
        assert!(
            svg.contains(&ridge(Precision::I32)),
            "{}",
            ridge(Precision::I32)
        );
        assert!(svg.contains(&ridge(Precision::F32)));
    }

    /// Points take their precision's colour and their family's shape; ridges are diamonds,
    /// which no point is; every precision in a picture has its own colour.
    #[test]
    fn colours_by_precision_shapes_by_family() {
        let cals = [a100()];
        let colours = Colours::of(&cals);
        let mut seen: Vec<Rgb> = colours.0.iter().map(|(_, c)| *c).collect();
        seen.sort_by_key(|c| (c.0, c.1, c.2));
        seen.dedup();
        assert_eq!(seen.len(), colours.0.len(), "{:?}", colours.0);
        assert!(colours.0.len() >= 8);
        let p = picture(&cals).unwrap();
        let mut point_marks = Vec::new();
        let mut fills = Vec::new();
        for item in &p.items {
            if let Item::Marker {
                mark,
                colour,
                class,
                ..
            } = item
            {
                match *class {
                    "point" => {
                        point_marks.push(*mark);
                        fills.push(*colour);
                    }
                    "ridge" => assert_eq!(*mark, Mark::Diamond),
                    _ => {}
                }
            }
        }
        assert!(point_marks.contains(&Mark::Circle) && point_marks.contains(&Mark::Triangle));
        assert!(!point_marks.contains(&Mark::Diamond));
        for precision in [Precision::F32, Precision::F64, Precision::I32] {
            assert!(fills.contains(&colours.get(precision)), "{precision}");
        }
        assert!(p
            .items
            .iter()
            .any(|i| matches!(i, Item::Marker { class: "ridge", .. })));
    }

    /// The axes hold the data and little more: not the decades around it.
    #[test]
    fn axes_are_trimmed_to_the_data() {
        let cal = real("20261130T082122Z");
        let ((x0, x1), (y0, y1)) = ranges(std::slice::from_ref(&cal), 8.0).unwrap();
        let xs = cal.points.iter().map(|p| p.flop_per_byte);
        let ys = cal.points.iter().map(|p| p.gflops);
        let (min_x, max_x) = (xs.clone().fold(f64::MAX, f64::min), xs.fold(0.0, f64::max));
        let min_y = ys.fold(f64::MAX, f64::min);
        let top = tops(&cal).0.unwrap();
        assert!(x0 < min_x && x0 > min_x / 2.0, "{x0} vs {min_x}");
        assert!(x1 > max_x && x1 < max_x * 2.0, "{x1} vs {max_x}");
        assert!(y0 < min_y && y0 > min_y / 2.0, "{y0} vs {min_y}");
        assert!(y1 > top && y1 < top * 2.0, "{y1} vs {top}");
    }

    /// The legend names each run by its id and its time.
    #[test]
    fn the_legend_names_each_run_by_id_and_time() {
        let cals = [real("20261130T081941Z"), real("20261130T082122Z")];
        let p = picture(&cals).unwrap();
        let legend: Vec<&str> = p
            .text_boxes()
            .into_iter()
            .filter(|(class, ..)| *class == "legend")
            .map(|(_, text, _)| text)
            .collect();
        for (letter, cal) in ["[A]", "[B]"].iter().zip(&cals) {
            assert!(
                legend.iter().any(|t| t.starts_with(letter)
                    && t.contains(&cal.run.run_id)
                    && t.contains(&run_time(cal))),
                "{legend:?}"
            );
        }
        assert_eq!(run_time(&cals[1]), "2026-11-30 08:21:22 to 08:22:56 UTC");
    }

    /// GEMM points are squares (ours) and plus signs (a reference's); each weight shape's batch
    /// sweep is one line through its points in order of M (dashed for a reference), named by
    /// its weight beside M = 1 by the placement routine; a square shape stands alone.
    #[test]
    fn gemm_batch_sweeps_are_connected_series() {
        use crate::analysis::roofline::tests::gemm_row;
        use crate::cases::gemm::{self, Shape};
        let mut records = synthetic_run();
        for m in [64, 1, 8] {
            for (kernel, share) in [(gemm::HOST_REFERENCE, 1.2), (gemm::HOST_OURS, 1.0)] {
                let shape = Shape::new(m, 4096, 4096);
                let mut r = gemm_row(
                    kernel,
                    Precision::F32,
                    shape,
                    100.0 * share * m as f64,
                    true,
                );
                r.ratio_to_reference = crate::run::runner::ratio_to_reference(&r, &records);
                records.push(r);
            }
        }
        records.push(gemm_row(
            "simd",
            Precision::F32,
            Shape::new(2, 14336, 4096),
            100.0,
            true,
        ));
        records.push(gemm_row(
            "simd",
            Precision::F32,
            Shape::square(1024),
            9000.0,
            true,
        ));
        let cal = cal_of(&records);
        let series = gemm_series(&cal.points);
        type Len<'a> = (&'a str, Option<(u64, u64)>, usize);
        let lens: Vec<Len<'_>> = series
            .iter()
            .map(|s| (s.kernel, s.weight, s.points.len()))
            .collect();
        assert_eq!(
            lens,
            [
                ("gemm-crate", Some((4096, 4096)), 3),
                ("simd", None, 1),
                ("simd", Some((4096, 4096)), 3),
                ("simd", Some((14336, 4096)), 1),
            ]
        );
        // ascending in M, so in intensity
        let xs: Vec<f64> = series[2].points.iter().map(|p| p.flop_per_byte).collect();
        assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
        let p = picture(std::slice::from_ref(&cal)).unwrap();
        assert!(
            readability_faults(&p).is_empty(),
            "{:?}",
            readability_faults(&p)
        );
        let lines: Vec<(usize, Option<&str>)> = p
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Line {
                    points,
                    dash,
                    class: "series",
                    ..
                } => Some((points.len(), *dash)),
                _ => None,
            })
            .collect();
        // two sweeps of three points (ours solid, the reference dashed); one point no line
        assert_eq!(lines, [(3, Some(REFERENCE_DASH)), (3, None)]);
        let marks = |mark: Mark| {
            p.items
                .iter()
                .filter(|i| matches!(i, Item::Marker { mark: m, class: "point", .. } if *m == mark))
                .count()
        };
        assert_eq!((marks(Mark::Square), marks(Mark::Cross)), (5, 3));
        let labels: Vec<&str> = p
            .text_boxes()
            .into_iter()
            .filter(|(class, ..)| *class == "label")
            .map(|(_, text, _)| text)
            .collect();
        assert!(labels.contains(&"N×K 4096×4096"), "{labels:?}");
        assert_eq!(p.unplaced, 0);
        let svg = p.to_svg();
        assert!(svg.contains("GEMM, ours: a weight's batch sweep"), "legend");
        assert!(svg.contains("GEMM, reference library"), "legend");
        roxmltree::Document::parse(&svg).unwrap();
    }

    /// Cache ceilings are drawn as their own roofs and named along them.
    #[test]
    fn cache_roofs_are_drawn_and_named() {
        let mut records = synthetic_run();
        for (kernel, gbps) in [("l1", 19_500.0), ("l2", 7_000.0)] {
            let bytes = 1u64 << 30;
            records.push(row(
                Family::Cache,
                kernel,
                Precision::I32,
                Some(crate::cases::Param::Count(4096)),
                (bytes, 0),
                bytes as f64 / (gbps * 1e9),
                true,
            ));
        }
        let svg = render(&[cal_of(&records)]).unwrap();
        assert!(svg.contains("L1 19500 GB/s (cache/l1/i32/4096)"), "{svg}");
        assert!(svg.contains("L2 7000 GB/s (cache/l2/i32/4096)"));
        // one more roof per cache level than without them
        let roofs = |svg: &str| svg.matches("class=\"roof\"").count();
        assert_eq!(roofs(&svg), roofs(&render(&[cal()]).unwrap()) + 2);
    }

    /// Runs of an overlay share the colours and are told apart by letter, line weight and
    /// marker fill; roofs drawn on top of each other share one name.
    #[test]
    fn several_runs_overlay() {
        let p = picture(&[a100(), h100()]).unwrap();
        let svg = p.to_svg();
        assert!(svg.contains("Roofline: 2 runs overlaid"));
        assert!(svg.contains("[B] NVIDIA H100 80GB HBM3 (cuda:0) on lab, 2026-01-01: spec sheet"));
        let fills: Vec<Fill> = p
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Marker {
                    class: "point",
                    fill,
                    ..
                } => Some(*fill),
                _ => None,
            })
            .collect();
        assert!(fills.contains(&Fill::Solid) && fills.contains(&Fill::Hollow));
        assert!(
            svg.contains("[A] f32, tensor f64.f64 18.7 TFLOP/s"),
            "{svg}"
        );
        assert!(
            svg.contains("[B] f32, tensor f64.f64 60.0 TFLOP/s"),
            "{svg}"
        );

        // The same device twice: one name per roof, both figures in it.
        let svg = render(&[real("20261130T081941Z"), real("20261130T082122Z")]).unwrap();
        assert!(svg.contains("[A] f32 541 · [B] 545 GFLOP/s"), "{svg}");
        assert!(svg.contains("[A,B] ridge 10.1 OP/B"), "{svg}");
    }

    /// Hygiene's markings: a ceiling set by a flagged row says SUSPECT (memory and compute, as
    /// in the ceilings table), a point above its roof beyond the noise gets a ring the legend
    /// calls ABOVE ROOF, and the header counts the suspect figures; an unflagged run has none.
    #[test]
    fn suspect_ceilings_and_points_above_the_roof_are_marked() {
        let plain = picture(&[cal()]).unwrap().to_svg();
        for word in ["SUSPECT", "ABOVE ROOF", "above-roof", "suspect figure"] {
            assert!(!plain.contains(word), "{word} in an unflagged run");
        }
        let mut rows = synthetic_run();
        for r in &mut rows {
            // every f32 STREAM row: an unflagged one would set the DRAM ceiling instead
            let f32_stream = r.family == Family::Stream;
            let f32_peak = r.family == Family::Peak;
            if r.valid && r.precision == Precision::F32 && (f32_stream || f32_peak) {
                r.flags = "high_cv(12.3%)".into();
            }
        }
        let mut c = cal_of(&rows);
        assert_eq!(c.suspect.len(), 3, "{:?}", c.suspect);
        c.points[0].above_roof = true;
        let above = c.points[0].clone();
        let p = picture(&[c.clone()]).unwrap();
        let svg = p.to_svg();
        assert!(
            svg.contains("DRAM 1500 GB/s (stream/triad/f32), SUSPECT"),
            "{svg}"
        );
        assert!(svg.contains("f32 15.0 TFLOP/s, SUSPECT"), "{svg}");
        assert!(svg.contains("3 suspect figure(s)"), "{svg}");
        assert!(svg.contains("ABOVE ROOF: above its roof"), "{svg}");
        let axes_px = |item: &Item| match item {
            Item::Marker {
                at,
                class: "above-roof",
                ..
            } => Some(*at),
            _ => None,
        };
        let rings: Vec<Xy> = p.items.iter().filter_map(axes_px).collect();
        assert_eq!(rings.len(), 1, "one point above its roof, one ring");
        let point_at = p.items.iter().find_map(|i| match i {
            Item::Marker {
                at, class: "point", ..
            } if (at.0 - rings[0].0).abs() < 1e-9 && (at.1 - rings[0].1).abs() < 1e-9 => Some(*at),
            _ => None,
        });
        assert!(point_at.is_some(), "the ring is not around a point");
        assert!(above.above_roof && readability_faults(&p).is_empty());
    }

    /// Text from files (a device name, a case id) reaches the SVG with its control characters
    /// written out and XML's specials escaped: the SVG is XML and says `\u{1b}`.
    #[test]
    fn control_characters_and_xml_specials_are_escaped() {
        let mut c = cal();
        c.device.name = "GPU\u{1b}[2J <b>&\"x\"".into();
        c.memory_ceilings[0].case = Some("stream/\u{7}triad<".into());
        c.run.run_id = "run\nforged".into();
        let p = picture(&[c.clone(), c]).unwrap();
        let svg = p.to_svg();
        let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
        let texts: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .collect();
        let all = texts.concat();
        assert!(!all.chars().any(char::is_control), "{all:?}");
        assert!(all.contains("GPU\\u{1b}[2J <b>&\"x\""), "{all}");
        assert!(all.contains("(stream/\\u{7}triad<)"), "{all}");
        assert!(all.contains("run\\u{a}forged"), "{all}");
        // the boxes the placement measured are those of the escaped texts
        assert!(readability_faults(&p).is_empty());
    }

    /// Names from a file can be any length (a reader takes a 70 000-character case id); the
    /// placement measured every one at every spot it tried and never ended (found by the
    /// fuzzer). The picture shows them cut, marked with `…`, and stays readable.
    #[test]
    fn a_name_of_70000_characters_is_cut_in_the_picture() {
        let mut c = cal();
        let long = "k".repeat(70_000);
        c.memory_ceilings[0].case = Some(long.clone());
        c.device.name = format!("GPU {long}");
        let p = picture(&[c.clone(), c]).unwrap();
        let svg = p.to_svg();
        let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
        let all: String = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .collect();
        assert!(all.contains("kkk…"), "no cut name in {all}");
        assert!(
            !all.contains(&long[..2_000]),
            "a name of 2 000 characters or more was drawn"
        );
        assert!(readability_faults(&p).is_empty());
    }

    #[test]
    fn above_spec_is_said_on_the_plot() {
        let mut rows = synthetic_run();
        let tensor = rows
            .iter_mut()
            .find(|r| r.family == Family::Tensor)
            .unwrap();
        let flops = tensor.flops as f64;
        crate::analysis::roofline::tests::retime(tensor, flops / 400_000e9);
        let svg = render(&[cal_of(&rows)]).unwrap();
        assert!(svg.contains("tensor f16.f32 400 TFLOP/s, ABOVE SPEC"));
    }

    /// Readers refuse such figures; the picture still must not panic on a calibration built in
    /// memory with them.
    #[test]
    fn absurd_figures_are_an_error_not_a_panic() {
        for (gbps, gflops) in [(1e300, 1e-300), (1e-300, 1e300), (f64::MAX, 1.0)] {
            let mut c = cal();
            c.memory_ceilings[0].gbps = Some(gbps);
            c.compute_ceilings[0].gflops = Some(gflops);
            match render(&[c]) {
                Ok(svg) => assert!(svg.starts_with("<svg")),
                Err(e) => assert!(e.to_string().contains("cannot plot"), "{e}"),
            }
        }
    }

    #[test]
    fn nothing_valid_still_draws_and_says_so() {
        let mut rows = synthetic_run();
        for r in &mut rows {
            crate::analysis::roofline::tests::invalidate(r, "[0] is NaN, should be 1");
            r.backend = crate::device::BackendKind::Host;
        }
        let svg = render(&[cal_of(&rows)]).unwrap();
        assert!(svg.contains("no valid measurement to plot"));
        assert!(svg.contains("0 of 12 cases valid; 12 invalid case(s) not plotted"));
        assert!(render(&[]).is_err());
    }
}
