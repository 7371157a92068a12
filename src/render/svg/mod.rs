//! The roofline picture: calibrations in, SVG text out. It writes every element itself (no
//! plotting library), so every text in the picture has a box the label placement knows, and
//! every text inside the plot is placed by the one rule of [`labels`]: no label on
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
//!
//! Its rooms: this file lays the picture out (header, axes, the names' places, legend);
//! `roofs.rs` draws one run's roofs, ridges, sweeps and points; [`axis`] chooses the ticks,
//! [`labels`] where a text may go, [`names`] what the names say, and
//! [`picture`](mod@picture) holds the elements and writes them as SVG; [`trail`] draws a watched
//! job's trail over a device's roofs.

pub mod axis;
pub mod labels;
pub mod names;
pub mod picture;
mod roofs;
pub mod trail;

use crate::analysis::calibration::Calibration;
use crate::analysis::roofline::{
    gemm_series, ComputeCeiling, GemmSeries, MemoryCeiling, MemoryLevel,
};
use crate::cases::ops;
use crate::cases::{Family, Precision};
use crate::render::svg::axis::{log_label, log_ticks, minor_ticks, TICK_PX};
use crate::render::svg::labels::{
    text_width, Anchor, Field, Label, Obstacle, Outcome, Spot, Xy, ASCENT_EM, DESCENT_EM,
};
use crate::render::svg::names::{merge, Named, Place, LABEL_PX};
use crate::render::svg::picture::{
    centred_baseline, run_style, wrap, Item, Legend, Mark, Picture, Rgb, Swatch, GREY, INK, WARNING,
};
use crate::render::svg::roofs::{
    draw_compute_roofs, draw_gemm_series, draw_memory_roofs, draw_points, Drawing, Names, Pen,
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
pub fn tick_ridge(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The dash of a reference library's GEMM sweep line.
pub const REFERENCE_DASH: &str = "4 3";

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

/// `2026-11-30 08:21:22 to 08:22:56 UTC`: a run's time span from its first and last rows.
pub fn run_time(cal: &Calibration) -> String {
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

/// A picture's title at its top left, wrapped to the width; returns the baseline after its last
/// line, px (the roofline's header and watch's trail open with it).
fn draw_title(items: &mut Vec<Item>, title: &str) -> f64 {
    let mut y = 12.0 + ASCENT_EM * TITLE_PX;
    for line in wrap(title, TITLE_PX, WIDTH - 40.0) {
        items.push(Item::text(
            line,
            TITLE_PX,
            Spot::flat((20.0, y), Anchor::Start, 0.0),
            INK,
            "title",
        ));
        y += TITLE_PX * 1.25;
    }
    y
}

/// The title, then each run's spec basis and case counts; returns where the header ends, px.
fn draw_header(items: &mut Vec<Item>, cals: &[Calibration]) -> f64 {
    let overlay = cals.len() > 1;
    let title = if overlay {
        format!("Roofline: {} runs overlaid", cals.len())
    } else {
        format!("Roofline: {}", cals[0].title())
    };
    let mut y = draw_title(items, &title);
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
    draw_key(&mut legend, items, cals);
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

/// The legend's key of lines and marks: only what the plot shows (its `items` so far) and the
/// point families the runs have.
fn draw_key(legend: &mut Legend, items: &mut Vec<Item>, cals: &[Calibration]) {
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
        text_width(&log_label(v), TICK_PX)
    });
    let y_ticks = log_ticks(y_range.0, y_range.1, b - t, |_| {
        (ASCENT_EM + DESCENT_EM) * TICK_PX
    });
    for &v in &x_ticks {
        let x = axes.x_px(v);
        items.push(Item::line((x, t), (x, b), Rgb(208, 208, 208), 1.0, "grid"));
        items.push(Item::line((x, b), (x, b + 5.0), INK, 1.0, "axis"));
        items.push(Item::text(
            log_label(v),
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
            log_label(v / y_scale),
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
        .map(|v| text_width(&log_label(*v / y_scale), TICK_PX))
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
/// find room, else in a column right of the plot. The picture as data, before [`render`] writes
/// it as SVG text: what the readability checks measure.
pub fn picture(cals: &[Calibration]) -> Result<Picture> {
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

/// Lays out the picture, the roofs' names in the plot or in a column right of it: the header,
/// the axes, each run's roofs, sweeps and points, the names placed, the legend.
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
    let mut drawn = Drawing::default();
    for (i, cal) in cals.iter().enumerate() {
        let pen = Pen {
            style: run_style(i),
            run: overlay.then(|| letter(i)),
            colours: &colours,
            axes: &axes,
        };
        draw_memory_roofs(&mut items, &mut drawn, cal, &pen);
        let column_at = (column_px > 0.0).then_some(r + COLUMN_LEADS);
        draw_compute_roofs(&mut items, &mut drawn, cal, &pen, column_at);
        let marks = draw_gemm_series(&mut items, &mut drawn, cal, &pen);
        draw_points(&mut drawn, marks, &pen);
    }
    items.extend(std::mem::take(&mut drawn.markers));

    let label_border = (l, t, r + column_px, b);
    let names = place_names(&mut items, drawn.names, drawn.obstacles, label_border);
    if !drawn.anything {
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
    let bottom = draw_legend(&mut items, cals, &colours, &names.unplaced, top);
    Ok(Picture {
        width: WIDTH,
        height: bottom + 12.0,
        label_border,
        unplaced: names.unplaced.len(),
        widest_roof_name: names.widest_roof_name,
        roof_names: names.roof_names,
        items,
    })
}

/// What placing the names leaves for the legend and for choosing between layouts.
struct Placed {
    /// The names that found no place (the legend lists them), with their colours.
    unplaced: Vec<(String, Rgb)>,
    /// The widest roof name, px.
    widest_roof_name: f64,
    /// How many roof names there were (several runs' roofs on one line share one).
    roof_names: usize,
}

/// Places the names within `border`, clear of `obstacles`, and adds them (and their leader
/// lines) to the picture: roofs' names first (they name the lines), then the memory roofs',
/// then the ridges', which fold into their roof's name where nothing is clear, then the GEMM
/// sweeps'. Roofs of several runs drawn on top of each other share a name.
fn place_names(
    items: &mut Vec<Item>,
    names: Names,
    obstacles: Vec<Obstacle>,
    border: (f64, f64, f64, f64),
) -> Placed {
    let (roof_names, roof_carrier) = merge(names.roofs);
    let (memory_names, _) = merge(names.memory);
    let (ridges, roofs_of_ridges): (Vec<Named>, Vec<usize>) = names.ridges.into_iter().unzip();
    let (ridges, ridge_carrier) = merge(ridges);
    let (series_names, _) = merge(names.series);
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
    let widest_roof_name = roof_names
        .iter()
        .map(|n| text_width(&n.text(), LABEL_PX))
        .fold(0.0, f64::max);
    let field = Field { border, obstacles };
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
    Placed {
        unplaced,
        widest_roof_name,
        roof_names: roof_names.len(),
    }
}
#[cfg(test)]
mod tests {
    //! The picture's private choices: its palette and its axes' ranges. The rest of its tests
    //! are the suite's (tests/svg.rs), through the public picture.
    use super::*;
    use crate::analysis::fixtures::{a100_like_run, calibration, committed_run};

    /// Points take their precision's colour and their family's shape; ridges are diamonds,
    /// which no point is; every precision in a picture has its own colour.
    #[test]
    fn colours_by_precision_shapes_by_family() {
        let cals = [calibration(&a100_like_run())];
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
        let cal = calibration(&committed_run("20261130T082122Z"));
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
}
