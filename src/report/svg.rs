//! The roofline picture: calibrations in, SVG text out (plotters' SVG backend, no fonts needed:
//! it writes `<text>` and the viewer lays it out).
//!
//! Log-log axes with units; measured ceilings solid, spec ceilings dashed, in one colour per
//! device; ridge points marked (filled: measured, hollow: spec) and labelled; measurement points
//! shaped by family (circle: STREAM kernel, triangle: intensity sweep). One device, or several
//! overlaid. Which compute ceilings are drawn: every measured one with its spec, and the spec
//! f64 and f32 ceilings even when nothing measured them, so a memory-only run still shows where
//! the sheet's roof is.
//!
//! Pure: it must not read or write files; the commands do.

use crate::bench::{Family, Precision};
use crate::calibration::Calibration;
use crate::report::compare::letter;
use crate::roofline::{ComputeCeiling, MemoryCeiling, MemoryLevel};
use crate::{Error, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub const WIDTH: u32 = 1200;
pub const HEIGHT: u32 = 800;

/// One colour per device, in input order (then repeating).
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
];

const FONT: &str = "sans-serif";

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
    let op = if precision.is_integer() {
        "OP/s"
    } else {
        "FLOP/s"
    };
    if gflops >= 1000.0 {
        format!("{} T{op}", three_digits(gflops / 1000.0))
    } else {
        format!("{} G{op}", three_digits(gflops))
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

/// A ceiling as drawn: value and where the memory roof meets it.
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
            measured: c.gflops,
            spec: c.spec_gflops,
        })
        .collect()
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
        .filter_map(|m| Some((m, m.gbps.filter(|b| b.is_finite() && *b > 0.0)?)))
}

/// The decade-aligned axis ranges that hold every point, ceiling and ridge of every device.
fn ranges(cals: &[Calibration]) -> Result<((f64, f64), (f64, f64))> {
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for cal in cals {
        for p in &cal.points {
            xs.push(p.flop_per_byte);
            ys.push(p.gflops);
        }
        let mem = dram(cal);
        for d in drawn_compute(cal) {
            ys.extend(d.measured);
            ys.extend(d.spec);
            if let Some(b) = mem.and_then(|m| m.gbps) {
                xs.extend(d.measured.map(|p| p / b));
            }
            if let Some(b) = mem.and_then(|m| m.spec_gbps) {
                xs.extend(d.spec.map(|p| p / b));
            }
            for (_, b) in caches(cal) {
                xs.extend(d.measured.map(|p| p / b));
            }
        }
    }
    let good = |v: &&f64| v.is_finite() && **v > 0.0;
    let lo = |v: &[f64], default: f64| {
        v.iter()
            .filter(good)
            .copied()
            .reduce(f64::min)
            .unwrap_or(default)
    };
    let hi = |v: &[f64], default: f64| {
        v.iter()
            .filter(good)
            .copied()
            .reduce(f64::max)
            .unwrap_or(default)
    };
    let x0 = 10f64.powf((lo(&xs, 0.1) / 1.5).log10().floor());
    let mut x1 = 10f64.powf((hi(&xs, 10.0) * 4.0).log10().ceil());
    if x1 / x0 < 99.0 {
        x1 = x0 * 100.0;
    }
    // The memory roofs span the whole x range: their ends count for y.
    for cal in cals {
        let top = drawn_compute(cal)
            .iter()
            .filter_map(|d| d.measured.or(d.spec))
            .reduce(f64::max);
        let dram_figures = dram(cal).map_or([None, None], |m| [m.gbps, m.spec_gbps]);
        let cache_figures = caches(cal).map(|(_, b)| b);
        for b in dram_figures.into_iter().flatten().chain(cache_figures) {
            ys.push(b * x0);
            ys.push(top.map_or(b * x1, |t| t.min(b * x1)));
        }
    }
    let y0 = 10f64.powf((lo(&ys, 1.0) / 1.5).log10().floor());
    let mut y1 = 10f64.powf((hi(&ys, 1000.0) * 2.5).log10().ceil());
    if y1 / y0 < 99.0 {
        y1 = y0 * 100.0;
    }
    // A figure no device can reach (a damaged or hand-edited file) would stretch the axes
    // past what can be drawn; say so instead.
    let sane = |lo: f64, hi: f64| lo.is_finite() && hi.is_finite() && lo > 0.0 && hi / lo <= 1e24;
    if !sane(x0, x1) || !sane(y0, y1) {
        return Err(Error::Usage(format!(
            "cannot plot: the figures span {x0:e}..{x1:e} FLOP/byte and {y0:e}..{y1:e} GFLOP/s, \
             more than 24 decades; check the input for damaged numbers"
        )));
    }
    // A hair beyond the decades, so the decade at each end gets its tick label.
    Ok(((x0 / 1.001, x1 * 1.001), (y0 / 1.001, y1 * 1.001)))
}

fn draw_err<E: std::fmt::Debug>(e: E) -> Error {
    Error::Internal(format!("drawing the roofline SVG: {e:?}"))
}

/// The short name of a device in legends: `[B] NVIDIA A100-SXM4-80GB` when several are overlaid.
fn short_name(cals: &[Calibration], i: usize) -> String {
    let name = crate::text::one_line(&cals[i].device.name);
    if cals.len() == 1 {
        name.into_owned()
    } else {
        format!("[{}] {name}", letter(i))
    }
}

/// Renders the roofline of one device, or several overlaid, as SVG text.
pub fn render(cals: &[Calibration]) -> Result<String> {
    if cals.is_empty() {
        return Err(Error::Usage("nothing to plot: no calibration given".into()));
    }
    let mut svg = String::new();
    let overlays;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let header_px = 64 + 20 * cals.len() as u32;
        let (header, body) = root.split_vertically(header_px);
        draw_header(&header, cals)?;
        overlays = draw_chart(&body, cals)?;
        root.present().map_err(draw_err)?;
    }
    // Text along the sloped memory roofs: plotters only turns text by right angles, so these
    // are written as SVG of our own, positioned from the chart's own coordinate mapping.
    if let Some(end) = svg.rfind("</svg>") {
        svg.insert_str(end, &overlays.concat());
    }
    Ok(svg)
}

/// Escapes text for an SVG text node or attribute; control characters (which XML 1.0 does not
/// allow at all) are written out as `\u{1b}`.
pub(crate) fn xml_escape(s: &str) -> String {
    crate::text::one_line(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A `<text>` element at pixel `at`, turned to run along a line of `angle_deg` (SVG degrees,
/// clockwise), shifted `dy` across it (positive: below the line).
fn sloped_text(
    text: &str,
    at: (i32, i32),
    angle_deg: f64,
    dy: &str,
    color: RGBColor,
    size: u32,
) -> String {
    let RGBColor(r, g, b) = color;
    format!(
        "<text x=\"{x}\" y=\"{y}\" dy=\"{dy}\" transform=\"rotate({angle_deg:.2} {x} {y})\" \
         text-anchor=\"start\" font-family=\"{FONT}\" font-size=\"{size}\" \
         fill=\"#{r:02X}{g:02X}{b:02X}\">{}</text>\n",
        xml_escape(text),
        x = at.0,
        y = at.1,
    )
}

fn draw_header(area: &DrawingArea<SVGBackend<'_>, Shift>, cals: &[Calibration]) -> Result<()> {
    let title = if cals.len() == 1 {
        format!("Roofline: {}", cals[0].title())
    } else {
        format!("Roofline: {} devices overlaid", cals.len())
    };
    let style = |size: i32| TextStyle::from((FONT, size).into_font()).color(&BLACK);
    area.draw_text(&crate::text::one_line(&title), &style(26), (20, 14))
        .map_err(draw_err)?;
    for (i, cal) in cals.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let who = if cals.len() == 1 {
            String::new()
        } else {
            format!("[{}] {}: ", letter(i), cal.title())
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
        let line = format!(
            "{who}{}; {} of {} cases valid{invalid}{no_compute}",
            cal.spec.describe(),
            cal.run.valid_cases,
            cal.run.cases
        );
        area.draw_text(
            &crate::text::one_line(&line),
            &TextStyle::from((FONT, 15).into_font()).color(&color),
            (20, 48 + 20 * i as i32),
        )
        .map_err(draw_err)?;
    }
    area.draw_text(
        "solid: measured ceiling · dashed: vendor spec · bytes = read + written, each element once (STREAM counting)",
        &TextStyle::from((FONT, 13).into_font()).color(&RGBColor(90, 90, 90)),
        (20, 48 + 20 * cals.len() as i32),
    )
    .map_err(draw_err)?;
    Ok(())
}

/// Draws axes, ceilings, ridges and points; returns the sloped labels to add as raw SVG.
fn draw_chart(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    cals: &[Calibration],
) -> Result<Vec<String>> {
    let mut overlays = Vec::new();
    let ((x0, x1), (y0, y1)) = ranges(cals)?;
    let mut chart = ChartBuilder::on(area)
        .margin_left(16)
        .margin_right(28)
        .margin_bottom(12)
        .x_label_area_size(52)
        .y_label_area_size(84)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
        .map_err(draw_err)?;
    let formatter = |v: &f64| tick(*v);
    chart
        .configure_mesh()
        .x_desc("Arithmetic intensity (FLOP/byte)")
        .y_desc("Performance (GFLOP/s)")
        .axis_desc_style((FONT, 18))
        .label_style((FONT, 14))
        .x_label_formatter(&formatter)
        .y_label_formatter(&formatter)
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(205, 205, 205))
        .draw()
        .map_err(draw_err)?;

    let mut anything = false;
    let mut end_labels: Vec<EndLabel> = Vec::new();
    let mut ridge_labels: Vec<RidgeLabel> = Vec::new();
    // Ceiling lines (memory roofs and compute roofs), px: (one end, other end).
    let mut ceiling_lines: Vec<Segment> = Vec::new();
    // Measurement points, px.
    let mut points_px: Vec<(i32, i32)> = Vec::new();
    for (i, cal) in cals.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let solid = ShapeStyle::from(&color).stroke_width(3);
        let dashed = ShapeStyle::from(&color.mix(0.75)).stroke_width(2);
        let prefix = if cals.len() == 1 {
            String::new()
        } else {
            format!("[{}] ", letter(i))
        };
        let computes = drawn_compute(cal);
        let mem = dram(cal);
        let top_measured = computes.iter().filter_map(|d| d.measured).reduce(f64::max);
        let top_spec = computes.iter().filter_map(|d| d.spec).reduce(f64::max);

        // Memory roofs: from the left edge up to the highest compute ceiling (or the right edge).
        if let Some(m) = mem {
            if let Some(b) = m.gbps {
                let end = top_measured.map_or(x1, |p| (p / b).min(x1));
                ceiling_lines.push((
                    chart.backend_coord(&(x0, b * x0)),
                    chart.backend_coord(&(end, b * end)),
                ));
                chart
                    .draw_series(LineSeries::new([(x0, b * x0), (end, b * end)], solid))
                    .map_err(draw_err)?
                    .label(format!("{}: measured ceilings", short_name(cals, i)))
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 22, y)], solid));
                // Along the line near its left end, under it: nothing else is drawn there.
                let case = m.case.as_deref().unwrap_or("");
                let above = if m.above_spec { ", ABOVE SPEC" } else { "" };
                overlays.push(along(
                    &chart,
                    (x0, x1),
                    b,
                    0.02,
                    &format!("{prefix}DRAM {} ({case}){above}", bandwidth(b)),
                    "1.3em",
                    color,
                ));
                anything = true;
            }
            if let Some(b) = m.spec_gbps {
                let end = top_spec.map_or(x1, |p| (p / b).min(x1));
                ceiling_lines.push((
                    chart.backend_coord(&(x0, b * x0)),
                    chart.backend_coord(&(end, b * end)),
                ));
                chart
                    .draw_series(DashedLineSeries::new(
                        [(x0, b * x0), (end, b * end)],
                        8,
                        6,
                        dashed,
                    ))
                    .map_err(draw_err)?
                    .label(format!("{}: spec ceilings", short_name(cals, i)))
                    .legend(move |(x, y)| {
                        EmptyElement::at((x, y))
                            + PathElement::new([(0, 0), (8, 0)], dashed)
                            + PathElement::new([(14, 0), (22, 0)], dashed)
                    });
                // Along the line, above it.
                overlays.push(along(
                    &chart,
                    (x0, x1),
                    b,
                    0.02,
                    &format!("{prefix}DRAM spec {}", bandwidth(b)),
                    "-0.45em",
                    color,
                ));
                anything = true;
            }
        }

        // Cache roofs (L1, L2, L3): thinner and lighter than DRAM's, up to the highest measured
        // compute roof; named along the line, above it.
        for (m, b) in caches(cal) {
            let end = top_measured.map_or(x1, |p| (p / b).min(x1));
            let style = ShapeStyle::from(&color.mix(0.55)).stroke_width(2);
            ceiling_lines.push((
                chart.backend_coord(&(x0, b * x0)),
                chart.backend_coord(&(end, b * end)),
            ));
            chart
                .draw_series(LineSeries::new([(x0, b * x0), (end, b * end)], style))
                .map_err(draw_err)?;
            let case = m.case.as_deref().unwrap_or("");
            overlays.push(along(
                &chart,
                (x0, x1),
                b,
                0.02,
                &format!("{prefix}{} {} ({case})", m.level.as_str(), bandwidth(b)),
                "-0.45em",
                color,
            ));
            anything = true;
        }

        // Compute roofs: horizontal from where the memory roof meets them to the right edge.
        // Their names go at the right end (measured under the line, spec over it), stacked so
        // they never overlap; a ridge gets its label beside its marker when that is clear of
        // the names, else in the ceiling's name.
        for d in &computes {
            let name = d.ceiling.label();
            let series = [
                (d.measured, mem.and_then(|m| m.gbps), true),
                (d.spec, mem.and_then(|m| m.spec_gbps), false),
            ];
            for (value, gbps, measured) in series {
                let Some(p) = value else { continue };
                anything = true;
                let start = gbps.map_or(x0, |b| (p / b).max(x0));
                if measured {
                    chart
                        .draw_series(LineSeries::new([(start, p), (x1, p)], solid))
                        .map_err(draw_err)?;
                } else {
                    chart
                        .draw_series(DashedLineSeries::new([(start, p), (x1, p)], 8, 6, dashed))
                        .map_err(draw_err)?;
                }
                let above = if measured && d.ceiling.above_spec {
                    ", ABOVE SPEC"
                } else {
                    ""
                };
                let mut text = if measured {
                    format!(
                        "{prefix}{name} {} measured{above}",
                        arithmetic(p, d.ceiling.precision)
                    )
                } else if d.measured.is_none() {
                    format!(
                        "{prefix}{name} spec {}, not measured",
                        arithmetic(p, d.ceiling.precision)
                    )
                } else {
                    format!("{prefix}{name} spec {}", arithmetic(p, d.ceiling.precision))
                };
                let ridge = gbps.map(|b| p / b).filter(|r| *r >= x0 && *r <= x1);
                if let Some(ridge) = ridge {
                    let marker = if measured {
                        ShapeStyle::from(&color).filled()
                    } else {
                        ShapeStyle::from(&color).stroke_width(2)
                    };
                    chart
                        .draw_series([Circle::new((ridge, p), 6, marker)])
                        .map_err(draw_err)?;
                    let what = if measured { "ridge" } else { "spec ridge" };
                    let ridge_text = format!("{what} {} FLOP/B", tick_ridge(ridge));
                    if ridge < x1 / 30.0 {
                        ridge_labels.push(RidgeLabel {
                            at: chart.backend_coord(&(ridge, p)),
                            measured,
                            text: ridge_text,
                            color,
                            end_label: end_labels.len(),
                        });
                    } else {
                        text = format!("{text} · {ridge_text}");
                    }
                }
                let (x, y) = chart.backend_coord(&(x1, p));
                ceiling_lines.push((chart.backend_coord(&(start, p)), (x, y)));
                end_labels.push(EndLabel {
                    line_y: y,
                    prefer_below: measured,
                    x: x - 8,
                    text,
                    color,
                });
            }
        }

        // Measurement points, by family.
        let stream: Vec<(f64, f64)> = cal
            .points
            .iter()
            .filter(|p| p.family == Family::Stream)
            .map(|p| (p.flop_per_byte, p.gflops))
            .collect();
        let sweep: Vec<(f64, f64)> = cal
            .points
            .iter()
            .filter(|p| p.family != Family::Stream)
            .map(|p| (p.flop_per_byte, p.gflops))
            .collect();
        points_px.extend(stream.iter().chain(&sweep).map(|c| chart.backend_coord(c)));
        let marker = ShapeStyle::from(&color).filled();
        let outline = ShapeStyle::from(&BLACK.mix(0.6)).stroke_width(1);
        if !stream.is_empty() {
            chart
                .draw_series(stream.iter().map(|&c| {
                    EmptyElement::at(c)
                        + Circle::new((0, 0), 5, marker)
                        + Circle::new((0, 0), 5, outline)
                }))
                .map_err(draw_err)?
                .label(format!(
                    "{}: STREAM kernels (flop/byte > 0)",
                    short_name(cals, i)
                ))
                .legend(move |(x, y)| Circle::new((x + 11, y), 5, marker));
            anything = true;
        }
        if !sweep.is_empty() {
            chart
                .draw_series(sweep.iter().map(|&c| {
                    EmptyElement::at(c)
                        + TriangleMarker::new((0, 0), 7, marker)
                        + TriangleMarker::new((0, 0), 7, outline)
                }))
                .map_err(draw_err)?
                .label(format!("{}: intensity sweep", short_name(cals, i)))
                .legend(move |(x, y)| TriangleMarker::new((x + 11, y), 7, marker));
            anything = true;
        }
    }
    for (i, placed) in place_ridge_labels(&ridge_labels, &ceiling_lines, &points_px)
        .into_iter()
        .enumerate()
    {
        match placed {
            Some((_, svg)) => overlays.push(svg),
            // No clear spot beside its marker: the ridge goes into its ceiling's name.
            None => {
                let l = &ridge_labels[i];
                let end = &mut end_labels[l.end_label];
                end.text = format!("{} · {}", end.text, l.text);
            }
        }
    }
    overlays.extend(place_end_labels(end_labels));
    if !anything {
        let (w, h) = area.dim_in_pixel();
        area.draw_text(
            "no valid measurement to plot",
            &TextStyle::from((FONT, 24).into_font())
                .color(&RGBColor(150, 0, 0))
                .pos(Pos::new(HPos::Center, VPos::Center)),
            (w as i32 / 2, h as i32 / 2),
        )
        .map_err(draw_err)?;
    } else {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(160, 160, 160))
            .draw()
            .map_err(draw_err)?;
    }
    Ok(overlays)
}

/// A label along the memory roof `y = gbps · x`, starting `start` of the way (in log x) into
/// the x range.
fn along<DB: DrawingBackend>(
    chart: &ChartContext<'_, DB, Cartesian2d<LogCoord<f64>, LogCoord<f64>>>,
    (x0, x1): (f64, f64),
    gbps: f64,
    start: f64,
    text: &str,
    dy: &str,
    color: RGBColor,
) -> String {
    let x = x0 * (x1 / x0).powf(start);
    let a = chart.backend_coord(&(x, gbps * x));
    let b = chart.backend_coord(&(x * 10.0, gbps * x * 10.0));
    let angle = f64::from(b.1 - a.1)
        .atan2(f64::from(b.0 - a.0))
        .to_degrees();
    sloped_text(text, a, angle, dy, color, 13)
}

/// A ceiling's name at the right end of its line.
struct EndLabel {
    /// The line's height, px.
    line_y: i32,
    /// Measured names go under their line, spec names over it, when there is room.
    prefer_below: bool,
    /// Right edge, px.
    x: i32,
    text: String,
    color: RGBColor,
}

/// Places the right-end names as raw SVG: each on its preferred side of its line, else the
/// other side, else stacked under the others, so that no name overlaps another or crosses a
/// ceiling line.
fn place_end_labels(mut labels: Vec<EndLabel>) -> Vec<String> {
    // A 12 px label with its baseline at y covers y - 11 ..= y + 3.
    const ASCENT: i32 = 11;
    const DESCENT: i32 = 3;
    let lines: Vec<i32> = labels.iter().map(|l| l.line_y).collect();
    labels.sort_by_key(|l| l.line_y);
    let mut placed: Vec<(i32, i32)> = Vec::new();
    let mut out = Vec::new();
    for l in labels {
        let below = l.line_y + 4 + ASCENT;
        let above = l.line_y - 4 - DESCENT;
        let sides = if l.prefer_below {
            [below, above]
        } else {
            [above, below]
        };
        let free = |y: i32, placed: &[(i32, i32)]| {
            let (top, bottom) = (y - ASCENT, y + DESCENT);
            placed.iter().all(|&(t, b)| bottom < t || top > b)
                && lines.iter().all(|&ly| ly < top - 1 || ly > bottom + 1)
        };
        let y = sides
            .into_iter()
            .find(|&y| free(y, &placed))
            .unwrap_or_else(|| {
                let mut y = below;
                while !placed
                    .iter()
                    .all(|&(t, b)| y + DESCENT < t || y - ASCENT > b)
                {
                    y += 1;
                }
                y
            });
        placed.push((y - ASCENT, y + DESCENT));
        out.push(flat_text((l.x, y), "end", 12, l.color, &l.text));
    }
    out
}

/// Horizontal text as raw SVG, its baseline at `at` (px).
fn flat_text(at: (i32, i32), anchor: &str, size: i32, color: RGBColor, text: &str) -> String {
    let RGBColor(r, g, b) = color;
    format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\" font-family=\"{FONT}\" \
         font-size=\"{size}\" fill=\"#{r:02X}{g:02X}{b:02X}\">{}</text>\n",
        at.0,
        at.1,
        xml_escape(text)
    )
}

/// A box on the plot, px: (left, top, right, bottom).
type Rect = (i32, i32, i32, i32);

fn overlaps(a: Rect, b: Rect) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

/// A straight line between two pixels.
type Segment = ((i32, i32), (i32, i32));

/// Whether a line passes through (or within 1 px of) a rectangle (left, top, right, bottom).
fn crosses(((ax, ay), (bx, by)): Segment, (l, t, r, b): Rect) -> bool {
    let steps = (ax - bx).abs().max((ay - by).abs()).max(1);
    (0..=steps).any(|i| {
        let f = f64::from(i) / f64::from(steps);
        let x = f64::from(ax) + f * f64::from(bx - ax);
        let y = f64::from(ay) + f * f64::from(by - ay);
        x >= f64::from(l - 1)
            && x <= f64::from(r + 1)
            && y >= f64::from(t - 1)
            && y <= f64::from(b + 1)
    })
}

/// A ridge's label, to be placed beside its marker.
struct RidgeLabel {
    /// The marker, px.
    at: (i32, i32),
    measured: bool,
    text: String,
    color: RGBColor,
    /// Index of its ceiling's [`EndLabel`], which takes the text where no spot is clear.
    end_label: usize,
}

/// Places ridge labels as raw SVG beside their markers: measured ones preferably right of the
/// marker and under the line, spec ones left of it and over, else any other corner, so that no
/// label overlaps another, another ridge's marker or a ceiling line; a corner that also keeps
/// clear of the measurement points is taken first. `None` where no corner is clear (the caller
/// then names the ridge at the ceiling's end instead).
fn place_ridge_labels(
    labels: &[RidgeLabel],
    ceiling_lines: &[Segment],
    points: &[(i32, i32)],
) -> Vec<Option<(Rect, String)>> {
    const SIZE: i32 = 13;
    const ASCENT: i32 = 11;
    const DESCENT: i32 = 3;
    /// Generous average advance of a 13 px sans-serif character, px.
    const CHAR_W: i32 = 7;
    const MARKER: i32 = 6;
    const GAP: i32 = 4;
    let markers: Vec<Rect> = labels
        .iter()
        .map(|l| {
            let (x, y) = l.at;
            (x - MARKER, y - MARKER, x + MARKER, y + MARKER)
        })
        .collect();
    let mut taken: Vec<Rect> = Vec::new();
    let mut out = Vec::new();
    for (i, l) in labels.iter().enumerate() {
        let (x, y) = l.at;
        let w = CHAR_W * l.text.chars().count() as i32;
        // (anchor end?, baseline): the four corners around the marker.
        let right_below = (false, x + MARKER + GAP, y + GAP + ASCENT);
        let right_above = (false, x + MARKER + GAP, y - GAP - DESCENT);
        let left_above = (true, x - MARKER - GAP, y - GAP - DESCENT);
        let left_below = (true, x - MARKER - GAP, y + GAP + ASCENT);
        let corners = if l.measured {
            [right_below, right_above, left_below, left_above]
        } else {
            [left_above, left_below, right_above, right_below]
        };
        const POINT: i32 = 7;
        let clear = |&(end, tx, base): &(bool, i32, i32), avoid_points: bool| {
            let left = if end { tx - w } else { tx };
            let rect = (left, base - ASCENT, left + w, base + DESCENT);
            let free = taken.iter().all(|&t| !overlaps(rect, t))
                && (!avoid_points
                    || points.iter().all(|&(px, py)| {
                        !overlaps(rect, (px - POINT, py - POINT, px + POINT, py + POINT))
                    }))
                && markers
                    .iter()
                    .enumerate()
                    .all(|(j, &m)| j == i || !overlaps(rect, m))
                && ceiling_lines.iter().all(|&line| !crosses(line, rect));
            free.then_some(rect)
        };
        let found = [true, false].into_iter().find_map(|avoid_points| {
            corners
                .iter()
                .find_map(|c| clear(c, avoid_points).map(|r| (*c, r)))
        });
        let Some((corner, rect)) = found else {
            out.push(None);
            continue;
        };
        taken.push(rect);
        let (end, tx, base) = corner;
        let anchor = if end { "end" } else { "start" };
        let svg = flat_text((tx, base), anchor, SIZE, l.color, &l.text);
        out.push(Some((rect, svg)));
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibration::FromRecords;
    use crate::roofline::tests::synthetic_run;

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
    }

    fn cal() -> Calibration {
        Calibration::from_records(&synthetic_run(), None).unwrap()
    }

    #[test]
    fn the_svg_says_what_it_shows() {
        let svg = render(&[cal()]).unwrap();
        assert!(svg.starts_with("<svg"));
        for text in [
            "Roofline: NVIDIA A100-SXM4-80GB (cuda:0) on lab, 2026-01-01",
            "Arithmetic intensity (FLOP/byte)",
            "Performance (GFLOP/s)",
            "DRAM 1500 GB/s (stream/triad/f32)",
            "DRAM spec 2039 GB/s",
            "f32 15.0 TFLOP/s measured",
            "f32 spec 19.5 TFLOP/s",
            "f64 spec 9.70 TFLOP/s, not measured",
            "ridge 10.0 FLOP/B",
            "spec sheet &quot;A100 80GB SXM4&quot;",
            "intensity sweep",
        ] {
            assert!(
                svg.contains(text) || svg.contains(&text.replace('"', "&quot;")),
                "missing `{text}`"
            );
        }
        insta::assert_snapshot!("roofline_one_device", svg);
    }

    /// Ridges close together (as on a CPU, where f32, i32 and f64 meet the memory roof within a
    /// factor of two) get labels that overlap neither each other, nor the other markers, nor
    /// the lines; where no corner is clear the ridge is left to its ceiling's name.
    #[test]
    fn ridge_labels_never_overlap() {
        let ridge = |at: (i32, i32), measured: bool| RidgeLabel {
            at,
            measured,
            text: "ridge 7.0 FLOP/B".to_string(),
            color: PALETTE[0],
            end_label: 0,
        };
        // Three ridges 10-30 px apart on a memory roof, their compute roofs running right.
        let labels = [
            ridge((607, 251), true),
            ridge((597, 258), true),
            ridge((554, 289), true),
        ];
        let lines = [
            ((100, 620), (607, 251)),
            ((607, 251), (1170, 251)),
            ((597, 258), (1170, 258)),
            ((554, 289), (1170, 289)),
        ];
        let placed = place_ridge_labels(&labels, &lines, &[]);
        let rects: Vec<Rect> = placed
            .iter()
            .map(|p| p.as_ref().expect("room for each label").0)
            .collect();
        for (i, &a) in rects.iter().enumerate() {
            for &b in &rects[i + 1..] {
                assert!(!overlaps(a, b), "{a:?} overlaps {b:?}");
            }
            for &line in &lines {
                assert!(!crosses(line, a), "{a:?} crosses {line:?}");
            }
            for (j, l) in labels.iter().enumerate() {
                let (x, y) = l.at;
                assert!(i == j || !overlaps(a, (x - 6, y - 6, x + 6, y + 6)));
            }
        }
        // A point in the preferred corner moves the label to another corner.
        let alone = [ridge((500, 300), true)];
        let free = place_ridge_labels(&alone, &[], &[]);
        let dodged = place_ridge_labels(&alone, &[], &[(540, 310)]);
        assert_ne!(free[0].as_ref().unwrap().0, dodged[0].as_ref().unwrap().0);
        // Lines through both the corners above and below it: no label, and the caller folds it.
        let cage = [((300, 285), (700, 285)), ((300, 315), (700, 315))];
        assert!(place_ridge_labels(&alone, &cage, &[])[0].is_none());
        // The same ridges in a real render are all labelled.
        assert_eq!(placed.len(), 3);
    }

    /// Cache ceilings are drawn as their own roofs and named along them.
    #[test]
    fn cache_roofs_are_drawn_and_named() {
        use crate::roofline::tests::row;
        let mut records = synthetic_run();
        for (kernel, gbps) in [("l1", 19_500.0), ("l2", 7_000.0)] {
            let bytes = 1u64 << 30;
            records.push(row(
                Family::Cache,
                kernel,
                Precision::I32,
                Some(4096),
                (bytes, 0),
                bytes as f64 / (gbps * 1e9),
                true,
            ));
        }
        let cal = Calibration::from_records(&records, None).unwrap();
        let svg = render(&[cal]).unwrap();
        assert!(svg.contains("L1 19500 GB/s (cache/l1/i32/4096)"), "{svg}");
        assert!(svg.contains("L2 7000 GB/s (cache/l2/i32/4096)"));
        // one more sloped line per cache level than without them
        let lines = |svg: &str| svg.matches("<polyline").count();
        assert_eq!(
            lines(&svg),
            lines(&render(&[cal_of(synthetic_run())]).unwrap()) + 2
        );
    }

    fn cal_of(records: Vec<crate::record::Record>) -> Calibration {
        Calibration::from_records(&records, None).unwrap()
    }

    #[test]
    fn several_devices_overlay_in_their_own_colours() {
        let mut b = cal();
        b.device.name = "NVIDIA GeForce RTX 3090".into();
        let svg = render(&[cal(), b]).unwrap();
        assert!(svg.contains("Roofline: 2 devices overlaid"));
        assert!(svg.contains("[B] NVIDIA GeForce RTX 3090: measured ceilings"));
        assert!(
            svg.contains("#D62728") || svg.contains("#d62728"),
            "second palette colour used"
        );
    }

    #[test]
    fn above_spec_is_said_on_the_plot() {
        let mut rows = synthetic_run();
        let tensor = rows
            .iter_mut()
            .find(|r| r.family == Family::Tensor)
            .unwrap();
        let flops = tensor.flops as f64;
        crate::roofline::tests::retime(tensor, flops / 400_000e9);
        let svg = render(&[Calibration::from_records(&rows, None).unwrap()]).unwrap();
        assert!(svg.contains("tensor f16.f32 400 TFLOP/s measured, ABOVE SPEC"));
    }

    /// Readers refuse such figures; the picture still must not panic on a calibration built in
    /// memory with them.
    #[test]
    fn absurd_figures_are_an_error_not_a_panic() {
        for (gbps, gflops) in [(1e300, 1e-300), (1e-300, 1e300), (f64::MAX, 1.0)] {
            let mut c = Calibration::from_records(&synthetic_run(), None).unwrap();
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
            crate::roofline::tests::invalidate(r, "[0] is NaN, should be 1");
            r.backend = crate::backend::BackendKind::Host;
        }
        let c = Calibration::from_records(&rows, None).unwrap();
        let svg = render(&[c]).unwrap();
        assert!(svg.contains("no valid measurement to plot"));
        assert!(svg.contains("0 of 12 cases valid; 12 invalid case(s) not plotted"));
        assert!(render(&[]).is_err());
    }
}
