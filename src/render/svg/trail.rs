//! `watch --svg`: a watched job's trail over the device's roofline. The roofs are the ceilings
//! the watch held its figures against (measured solid, spec dashed: DRAM, and the compute roof
//! of each pipe the job used); each sample that has both an achieved rate and an achieved
//! bandwidth is a small dot at its intensity, joined in time order (the trail), in its
//! verdict's colour; each phase is a numbered marker at its median, named in the legend under
//! the plot with its verdict and figure. A signal that places no point (NVML utilisation, the
//! host's `/proc`) gets the roofs and a line saying why there is no trail.
//!
//! It reuses the roofline picture's axes, ticks, label placement and SVG writing (the parent
//! module); it must not read or write files.

use super::labels::{self, Anchor, Field, Label, Obstacle, Outcome, Shape, Spot, Xy};
use super::names::LABEL_PX;
use super::picture::{wrap, Fill, Item, Legend, Mark, Picture, Rgb, Swatch, GREY, INK};
use super::{
    arithmetic, at_least_a_decade, bandwidth, draw_axes, good, Axes, HEADER_PX, PLOT_HEIGHT,
    PLOT_LEFT, PLOT_RIGHT, WIDTH,
};
use crate::analysis::watch::{Ceiling, DeviceSummary, Verdict};
use crate::results::timeline::TimelineRow;
use crate::{Error, Result};

/// Each verdict's colour, in the trail and the legend.
fn colour(v: Verdict) -> Rgb {
    match v {
        Verdict::Capacity => Rgb(190, 0, 0),
        Verdict::Bandwidth => Rgb(31, 119, 180),
        Verdict::Compute => Rgb(224, 104, 11),
        Verdict::Idle => Rgb(150, 150, 150),
        Verdict::Latency => Rgb(148, 103, 189),
        Verdict::Busy => Rgb(140, 86, 75),
    }
}

fn verdict_named(name: &str) -> Verdict {
    match name {
        "capacity" => Verdict::Capacity,
        "bandwidth" => Verdict::Bandwidth,
        "compute" => Verdict::Compute,
        "latency" => Verdict::Latency,
        "busy" => Verdict::Busy,
        _ => Verdict::Idle,
    }
}

/// A roof as drawn: its name, value, and whether measured.
struct Roof {
    name: String,
    value: f64,
    measured: bool,
}

fn roofs_of(name: &str, c: &Ceiling, text: &dyn Fn(f64) -> String) -> Vec<Roof> {
    let mut out = Vec::new();
    if let Some(v) = c.measured.filter(|v| good(*v)) {
        out.push(Roof {
            name: format!("{name} {} measured", text(v)),
            value: v,
            measured: true,
        });
    }
    if let Some(v) = c.spec.filter(|v| good(*v)) {
        out.push(Roof {
            name: format!("{name} spec {}", text(v)),
            value: v,
            measured: false,
        });
    }
    out
}

/// The picture of one device's watch: `summary` and its rows in time order.
pub fn render(summary: &DeviceSummary, rows: &[&TimelineRow]) -> Result<String> {
    Ok(picture(summary, rows)?.to_svg())
}

/// What the picture shows of one watch, in data units: the roofs (DRAM, and each pipe the
/// samples name, with its precision), each sample that places a point (its intensity, its rate,
/// its verdict), and each phase that does (its number from 1, its median point, its verdict).
struct Trail {
    dram: Vec<Roof>,
    computes: Vec<(Roof, crate::cases::Precision)>,
    points: Vec<(f64, f64, Verdict)>,
    phases: Vec<(usize, f64, f64, Verdict)>,
}

/// The texts to place in the plot, each in its colour, and what they must keep off.
#[derive(Default)]
struct ToPlace {
    obstacles: Vec<Obstacle>,
    labels: Vec<(Label, Rgb)>,
}

fn picture(s: &DeviceSummary, rows: &[&TimelineRow]) -> Result<Picture> {
    let mut items = Vec::new();
    let y = draw_header(&mut items, s);
    let trail = trail_of(s, rows);
    let axes = axes_for(&trail, y)?;
    let x_title_baseline = draw_axes(&mut items, &[], &axes);
    let mut to_place = ToPlace::default();
    draw_dram_roofs(&mut items, &mut to_place, &axes, &trail);
    draw_compute_roofs(&mut items, &mut to_place, &axes, &trail);
    draw_trail(&mut items, &mut to_place, &axes, &trail);
    let unplaced = place_labels(&mut items, to_place, axes.plot);
    let height = draw_legend(&mut items, s, &trail, &unplaced, x_title_baseline);
    Ok(Picture {
        width: WIDTH,
        height,
        label_border: axes.plot,
        unplaced: unplaced.len(),
        widest_roof_name: 0.0,
        roof_names: 0,
        items,
    })
}

/// The header: the title, then the signal, the verdict and the ceilings' sources, wrapped.
/// Returns the baseline below it.
fn draw_header(items: &mut Vec<Item>, s: &DeviceSummary) -> f64 {
    let title = format!(
        "Watch: {} ({}), {} samples over {:.1} s",
        s.device_name,
        s.device_id,
        s.samples,
        (s.to_s - s.from_s).max(0.0)
    );
    let mut y = super::draw_title(items, &title);
    let verdict = s.verdict.map_or_else(
        || "no verdict".to_string(),
        |v| format!("verdict: {}", v.as_str()),
    );
    let header = format!(
        "signal: {} · {verdict} · {}",
        s.signal.as_str(),
        s.ceilings.sources.join(" · ")
    );
    for line in wrap(&header, HEADER_PX, WIDTH - 40.0) {
        items.push(Item::text(
            line,
            HEADER_PX,
            Spot::flat((20.0, y), Anchor::Start, 0.0),
            GREY,
            "header",
        ));
        y += HEADER_PX * 1.4;
    }
    y
}

/// The roofs (DRAM, and each pipe the samples name), the samples and the phases that place a
/// point.
fn trail_of(s: &DeviceSummary, rows: &[&TimelineRow]) -> Trail {
    let dram = roofs_of("DRAM", &s.ceilings.dram_gbps, &bandwidth);
    let mut computes: Vec<(Roof, crate::cases::Precision)> = Vec::new();
    for p in &s.ceilings.pipes {
        if rows.iter().any(|r| r.compute_pipe == p.label) {
            let precision = p.precision;
            let text = move |v: f64| arithmetic(v, precision);
            for r in roofs_of(&p.label, &p.ceiling, &text) {
                computes.push((r, precision));
            }
        }
    }
    let points: Vec<(f64, f64, Verdict)> = rows
        .iter()
        .filter_map(|r| {
            let (x, y) = (r.flop_per_byte?, r.compute_gflops?);
            (good(x) && good(y)).then(|| (x, y, verdict_named(&r.verdict)))
        })
        .collect();
    let phases: Vec<(usize, f64, f64, Verdict)> = s
        .phases
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let (x, y) = (p.flop_per_byte?, p.compute_gflops?);
            (good(x) && good(y)).then_some((i + 1, x, y, p.verdict))
        })
        .collect();
    Trail {
        dram,
        computes,
        points,
        phases,
    }
}

/// Axes that hold every point, every roof and ridge, with a margin around them, in a plot
/// whose top is just below `header_bottom`. Refused past 24 decades.
fn axes_for(trail: &Trail, header_bottom: f64) -> Result<Axes> {
    let Trail {
        dram,
        computes,
        points,
        ..
    } = trail;
    let mut xs: Vec<f64> = points.iter().map(|p| p.0).collect();
    let mut ys: Vec<f64> = points.iter().map(|p| p.1).collect();
    ys.extend(computes.iter().map(|(r, _)| r.value));
    for (c, _) in computes {
        for d in dram {
            xs.push(c.value / d.value);
        }
    }
    if ys.is_empty() {
        ys.extend(dram.iter().flat_map(|d| [d.value * 0.1, d.value * 10.0]));
    }
    let lo = |v: &[f64]| v.iter().copied().filter(|x| good(*x)).reduce(f64::min);
    let hi = |v: &[f64]| v.iter().copied().filter(|x| good(*x)).reduce(f64::max);
    let (x0, x1) = match (lo(&xs), hi(&xs)) {
        (Some(a), Some(b)) => at_least_a_decade(a / 2.0, b * 4.0),
        _ => (0.1, 100.0),
    };
    let (y0, y1) = match (lo(&ys), hi(&ys)) {
        (Some(a), Some(b)) => at_least_a_decade(a / 2.0, b * 2.0),
        _ => (1.0, 1000.0),
    };
    if x1 / x0 > 1e24 || y1 / y0 > 1e24 {
        return Err(Error::Usage(
            "cannot draw the trail: its figures span more than 24 decades".to_string(),
        ));
    }
    let top = header_bottom + 8.0;
    Ok(Axes {
        x: (x0, x1),
        y: (y0, y1),
        plot: (PLOT_LEFT, top, PLOT_RIGHT, top + PLOT_HEIGHT),
    })
}

/// A roof's line: solid and heavier where measured, dashed where only the spec says; an
/// obstacle its labels may cross.
fn draw_roof(
    items: &mut Vec<Item>,
    to_place: &mut ToPlace,
    (a, z): (Xy, Xy),
    stroke: Rgb,
    measured: bool,
) {
    items.push(Item::Line {
        points: vec![a, z],
        stroke,
        width: if measured { 2.6 } else { 1.8 },
        dash: (!measured).then_some("7 5"),
        class: "roof",
    });
    to_place.obstacles.push(Obstacle {
        shape: Shape::segment(a, z),
        crossable: true,
    });
}

/// A roof's name, to be placed at one of `spots`.
fn roof_label(text: &str, spots: Vec<Spot>) -> Label {
    Label {
        text: text.to_string(),
        size_px: LABEL_PX,
        spots,
        anchors: Vec::new(),
        anchor_gap: 0.0,
        leader_max: 0.0,
        fold_into: None,
    }
}

/// Each DRAM roof, the slope from the plot's edge to where the highest compute roof cuts it,
/// named along its length.
fn draw_dram_roofs(items: &mut Vec<Item>, to_place: &mut ToPlace, axes: &Axes, trail: &Trail) {
    let ((x0, x1), (y0, y1)) = (axes.x, axes.y);
    let top_roof = trail.computes.iter().map(|(c, _)| c.value).reduce(f64::max);
    for d in &trail.dram {
        let enter = x0.max(y0 / d.value);
        let leave = x1
            .min(y1 / d.value)
            .min(top_roof.map_or(f64::INFINITY, |p| p / d.value));
        if enter >= leave {
            continue;
        }
        let (a, z) = (
            axes.px((enter, d.value * enter)),
            axes.px((leave, d.value * leave)),
        );
        let stroke = if d.measured { Rgb(38, 38, 38) } else { GREY };
        draw_roof(items, to_place, (a, z), stroke, d.measured);
        let angle = (z.1 - a.1).atan2(z.0 - a.0).to_degrees();
        let spots = (1..=6)
            .flat_map(|k| {
                let f = k as f64 / 7.0;
                let at = (a.0 + f * (z.0 - a.0), a.1 + f * (z.1 - a.1));
                [-6.0, 14.0].map(|off| Spot {
                    at: (
                        at.0 - off * angle.to_radians().sin(),
                        at.1 + off * angle.to_radians().cos(),
                    ),
                    anchor: Anchor::Middle,
                    angle_deg: angle,
                    cost: f,
                    leader: None,
                })
            })
            .collect();
        to_place.labels.push((roof_label(&d.name, spots), stroke));
    }
}

/// Each compute roof, flat from the first DRAM roof's ridge to the plot's right edge, named
/// at its right end or its middle.
fn draw_compute_roofs(items: &mut Vec<Item>, to_place: &mut ToPlace, axes: &Axes, trail: &Trail) {
    let ((x0, x1), (y0, y1)) = (axes.x, axes.y);
    for (c, _) in &trail.computes {
        let start = trail
            .dram
            .first()
            .map_or(x0, |d| (c.value / d.value).max(x0));
        if c.value < y0 || c.value > y1 || start >= x1 {
            continue;
        }
        let (a, z) = (axes.px((start, c.value)), axes.px((x1, c.value)));
        let stroke = if c.measured {
            Rgb(224, 104, 11)
        } else {
            Rgb(224, 160, 110)
        };
        draw_roof(items, to_place, (a, z), stroke, c.measured);
        let spots = [
            (z.0 - 6.0, -6.0, 0.0),
            (z.0 - 6.0, 16.0, 1.0),
            ((a.0 + z.0) / 2.0, -6.0, 2.0),
            ((a.0 + z.0) / 2.0, 16.0, 3.0),
        ]
        .into_iter()
        .map(|(x, dy, cost)| Spot::flat((x, a.1 + dy), Anchor::End, cost))
        .collect();
        to_place.labels.push((roof_label(&c.name, spots), stroke));
    }
}

/// The trail: a thin line through the samples in time order, a dot each, then each phase as
/// a numbered diamond at its median.
fn draw_trail(items: &mut Vec<Item>, to_place: &mut ToPlace, axes: &Axes, trail: &Trail) {
    let px: Vec<(f64, f64)> = trail.points.iter().map(|p| axes.px((p.0, p.1))).collect();
    if px.len() > 1 {
        items.push(Item::Line {
            points: px.clone(),
            stroke: Rgb(190, 190, 190),
            width: 0.8,
            dash: None,
            class: "trail",
        });
    }
    for (at, p) in px.iter().zip(&trail.points) {
        items.push(Item::Marker {
            mark: Mark::Circle,
            at: *at,
            size: 2.2,
            colour: colour(p.2),
            fill: Fill::Tint,
            dash: None,
            class: "sample",
        });
    }
    for &(n, x, yv, v) in &trail.phases {
        let at = axes.px((x, yv));
        items.push(Item::Marker {
            mark: Mark::Diamond,
            at,
            size: 7.0,
            colour: colour(v),
            fill: Fill::Solid,
            dash: None,
            class: "phase",
        });
        to_place.obstacles.push(Obstacle {
            shape: super::picture::marker_extent(at, 7.0),
            crossable: false,
        });
        let spots = [(10.0, 4.0), (-10.0, 4.0), (0.0, -10.0), (0.0, 18.0)]
            .into_iter()
            .enumerate()
            .map(|(k, (dx, dy))| {
                let anchor = if dx > 0.0 {
                    Anchor::Start
                } else if dx < 0.0 {
                    Anchor::End
                } else {
                    Anchor::Middle
                };
                Spot::flat((at.0 + dx, at.1 + dy), anchor, k as f64)
            })
            .collect();
        to_place.labels.push((
            Label {
                text: n.to_string(),
                size_px: LABEL_PX,
                spots,
                anchors: vec![at],
                anchor_gap: 8.0,
                leader_max: 40.0,
                fold_into: None,
            },
            colour(v),
        ));
    }
}

/// Places the labels inside `border`, drawing each placed one (with its leader); returns the
/// texts that found no room.
fn place_labels(
    items: &mut Vec<Item>,
    to_place: ToPlace,
    border: (f64, f64, f64, f64),
) -> Vec<String> {
    let field = Field {
        border,
        obstacles: to_place.obstacles,
    };
    let (labels, colours): (Vec<Label>, Vec<Rgb>) = to_place.labels.into_iter().unzip();
    let mut unplaced = Vec::new();
    for (outcome, c) in labels::place(&labels, &field).into_iter().zip(colours) {
        match outcome {
            Outcome::Placed(p) => {
                if let Some((from, to)) = p.leader {
                    items.push(Item::line(from, to, c, 0.8, "leader"));
                }
                items.push(Item::text(p.text, p.size_px, p.spot, c, "label"));
            }
            Outcome::Unplaced { text } => unplaced.push(text),
            Outcome::Folded { .. } => {}
        }
    }
    unplaced
}

/// The legend under the plot: why there is no trail (where none), each phase with its verdict
/// and figure, then what found no room in the plot. Returns the picture's height.
fn draw_legend(
    items: &mut Vec<Item>,
    s: &DeviceSummary,
    trail: &Trail,
    unplaced: &[String],
    x_title_baseline: f64,
) -> f64 {
    let mut legend = Legend::new(PLOT_LEFT, PLOT_RIGHT, x_title_baseline + 14.0);
    if trail.points.is_empty() {
        legend.row(
            items,
            Swatch::None,
            &format!(
                "no trail: the {} signal gives no achieved rate and bandwidth to place a sample \
                 by (docs/watch.md)",
                s.signal.as_str()
            ),
            GREY,
        );
    }
    for (i, p) in s.phases.iter().enumerate() {
        legend.row(
            items,
            Swatch::Block(colour(p.verdict)),
            &format!(
                "{} · {:.1}–{:.1} s · {}: {}",
                i + 1,
                p.from_s,
                p.to_s,
                p.verdict.as_str(),
                p.figure
            ),
            INK,
        );
    }
    if !unplaced.is_empty() {
        legend.row(
            items,
            Swatch::None,
            &format!("not placed in the plot: {}", unplaced.join(" · ")),
            GREY,
        );
    }
    legend.bottom() + 16.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::watch::Signal;

    /// A trail with two phases draws well-formed SVG with its roofs, its samples, a numbered
    /// marker per phase and a legend row per phase; a signal with no trail says why.
    #[test]
    fn a_trail_is_drawn_over_its_roofs() {
        let summary = crate::analysis::fixtures::watch_summary();
        let rows: Vec<TimelineRow> = (0..10)
            .map(|i| TimelineRow {
                t_s: i as f64,
                compute_pipe: "tensor bf16.f32".into(),
                flop_per_byte: Some(if i < 5 { 10.0 } else { 300.0 }),
                compute_gflops: Some(if i < 5 { 30_000.0 } else { 500_000.0 }),
                verdict: if i < 5 { "bandwidth" } else { "compute" }.into(),
                ..TimelineRow::default()
            })
            .collect();
        let refs: Vec<&TimelineRow> = rows.iter().collect();
        let svg = render(&summary, &refs).unwrap();
        roxmltree::Document::parse(&svg).expect("well-formed SVG");
        assert_eq!(svg.matches("class=\"sample\"").count(), 10);
        assert_eq!(svg.matches("class=\"phase\"").count(), 2);
        assert_eq!(svg.matches("class=\"roof\"").count(), 4, "{svg}");
        assert!(svg.contains("figure of compute"));
        let none: Vec<&TimelineRow> = Vec::new();
        let mut coarse = summary.clone();
        coarse.signal = Signal::Utilisation;
        coarse.phases.clear();
        let svg = render(&coarse, &none).unwrap();
        roxmltree::Document::parse(&svg).unwrap();
        assert!(svg.contains("no trail"), "{svg}");
    }
}
