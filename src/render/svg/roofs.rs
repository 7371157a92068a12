//! One run's part of the roofline picture: its memory and compute roofs with their ridges,
//! its GEMM batch sweeps and its measurement points, each drawn in the run's style and named
//! for the label placement to place. It lays nothing out: the axes, the header, the names'
//! places and the legend are the picture's ([`super`]).

use super::{
    arithmetic, bandwidth, caches, dram, drawn_compute, good, mark_of, memory_colour, suspect,
    tick_ridge, tops, Axes, Colours, REFERENCE_DASH,
};
use crate::analysis::calibration::Calibration;
use crate::analysis::roofline::{gemm_series, MemoryLevel};
use crate::cases::{ops, Family};
use crate::render::svg::labels::{Obstacle, Shape, Xy};
use crate::render::svg::names::{Figure, Named, Place};
use crate::render::svg::picture::{
    marker_extent, point_size, Fill, Item, Mark, RunStyle, ABOVE_ROOF_RING, SERIES_WIDTH, WARNING,
};

/// How one run is drawn: its line weight, shade and fill, its letter in an overlay, the
/// colours of the picture and the axes that place it.
pub(super) struct Pen<'a> {
    pub(super) style: RunStyle,
    pub(super) run: Option<String>,
    pub(super) colours: &'a Colours,
    pub(super) axes: &'a Axes,
}

/// The names the runs' drawing leaves to place, by kind.
#[derive(Default)]
pub(super) struct Names {
    pub(super) roofs: Vec<Named>,
    pub(super) memory: Vec<Named>,
    /// Each ridge's name, and the index of its roof's name in `roofs`.
    pub(super) ridges: Vec<(Named, usize)>,
    pub(super) series: Vec<Named>,
}

/// What drawing the runs collects beside the lines it adds to the picture: the markers (drawn
/// over every line), what the labels must keep clear of, the names to place, and whether
/// anything at all was drawn.
#[derive(Default)]
pub(super) struct Drawing {
    pub(super) markers: Vec<Item>,
    pub(super) obstacles: Vec<Obstacle>,
    pub(super) names: Names,
    pub(super) anything: bool,
}

impl Drawing {
    /// A line a label may cross but not lie on.
    fn crossable(&mut self, a: Xy, z: Xy) {
        self.obstacles.push(Obstacle {
            shape: Shape::segment(a, z),
            crossable: true,
        });
    }

    /// A marker no label may touch.
    fn solid(&mut self, at: Xy, size: f64) {
        self.obstacles.push(Obstacle {
            shape: marker_extent(at, size),
            crossable: false,
        });
    }
}

/// The measured and spec DRAM GB/s of a run, where they are usable figures.
fn dram_gbps(cal: &Calibration) -> (Option<f64>, Option<f64>) {
    dram(cal).map_or((None, None), |m| {
        (
            m.gbps.filter(|v| good(*v)),
            m.spec_gbps.filter(|v| good(*v)),
        )
    })
}

/// Memory roofs: y = b·x, from where they enter the plot to where they meet the highest
/// compute roof (or leave the plot), each named along its line.
pub(super) fn draw_memory_roofs(
    items: &mut Vec<Item>,
    drawn: &mut Drawing,
    cal: &Calibration,
    pen: &Pen,
) {
    let ((x0, x1), (y0, y1)) = (pen.axes.x, pen.axes.y);
    let run = &pen.run;
    let (top_measured, top_spec) = tops(cal);
    let (b_measured, b_spec) = dram_gbps(cal);
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
        drawn.anything = true;
        let colour = memory_colour(level).shade(pen.style.shade);
        let width = if level == MemoryLevel::Dram && measured {
            2.6
        } else {
            1.8
        };
        let (a, z) = (
            pen.axes.px((enter, bw * enter)),
            pen.axes.px((leave, bw * leave)),
        );
        items.push(Item::Line {
            points: vec![a, z],
            stroke: colour,
            width: width * pen.style.line_scale,
            dash: (!measured).then_some("7 5"),
            class: "roof",
        });
        drawn.crossable(a, z);
        let spec = if measured { "" } else { " spec" };
        drawn.names.memory.push(Named {
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
}

/// Compute roofs: from where the DRAM roof meets them to the right edge, named near their
/// right end (or in the column at `column_at`, px, where there is one); a ridge marker where
/// they meet, labelled beside it.
pub(super) fn draw_compute_roofs(
    items: &mut Vec<Item>,
    drawn: &mut Drawing,
    cal: &Calibration,
    pen: &Pen,
    column_at: Option<f64>,
) {
    let (x0, x1) = pen.axes.x;
    let (b_measured, b_spec) = dram_gbps(cal);
    for d in drawn_compute(cal) {
        let name = d.ceiling.label();
        let precision = d.ceiling.precision;
        let colour = pen.colours.get(precision).shade(pen.style.shade);
        for (value, bw, measured) in [(d.measured, b_measured, true), (d.spec, b_spec, false)] {
            let Some(p) = value else { continue };
            drawn.anything = true;
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
            let (a, z) = (pen.axes.px((start, p)), pen.axes.px((x1, p)));
            items.push(Item::Line {
                points: vec![a, z],
                stroke: colour,
                width: if measured { 2.6 } else { 1.8 } * pen.style.line_scale,
                dash: (!measured).then_some("7 5"),
                class: "roof",
            });
            drawn.crossable(a, z);
            let name_index = drawn.names.roofs.len();
            drawn.names.roofs.push(Named {
                kind: kind.to_string(),
                figures: vec![Figure::new(pen.run.clone(), stem, &rate, tail)],
                place: Place::RoofEnd {
                    a,
                    z,
                    measured,
                    column: column_at,
                },
                colour,
            });
            if let Some(x) = ridge {
                let at = pen.axes.px((x, p));
                let size = 6.5;
                drawn.markers.push(Item::Marker {
                    mark: Mark::Diamond,
                    at,
                    size,
                    colour,
                    fill: Fill::Hollow,
                    dash: (!measured).then_some("2 2"),
                    class: "ridge",
                });
                drawn.solid(at, size);
                if let (true, Some(figure)) = (measured, &ridge_figure) {
                    drawn.names.ridges.push((
                        Named {
                            kind: "ridge".into(),
                            figures: vec![Figure::new(pen.run.clone(), "ridge", figure, "")],
                            place: Place::Beside { at, size, measured },
                            colour,
                        },
                        name_index,
                    ));
                }
            }
        }
    }
}

/// GEMM batch sweeps: a thin line through each weight's points in order of M (dashed for a
/// reference library's), named beside its smallest M. Returns every point of the run to mark,
/// with its shape (the sweeps' first, by their series).
pub(super) fn draw_gemm_series<'c>(
    items: &mut Vec<Item>,
    drawn: &mut Drawing,
    cal: &'c Calibration,
    pen: &Pen,
) -> Vec<(&'c roofprobe_calibration::Point, Mark)> {
    let mut marks: Vec<(&roofprobe_calibration::Point, Mark)> = Vec::new();
    for series in gemm_series(&cal.points) {
        let colour = pen.colours.get(series.precision).shade(pen.style.shade);
        let px: Vec<Xy> = series
            .points
            .iter()
            .map(|p| pen.axes.px((p.flop_per_byte, p.gflops)))
            .collect();
        marks.extend(series.points.iter().map(|p| (*p, mark_of(&series))));
        let (Some((n, k)), [first, .., _]) = (series.weight, &px[..]) else {
            continue;
        };
        items.push(Item::Line {
            points: px.clone(),
            stroke: colour,
            width: SERIES_WIDTH * pen.style.line_scale,
            dash: series.reference().then_some(REFERENCE_DASH),
            class: "series",
        });
        for pair in px.windows(2) {
            drawn.crossable(pair[0], pair[1]);
        }
        // Ours are named, by weight, at M = 1 (where the sweeps lie apart, along the DRAM
        // roof; at large M they crowd under the compute roof); a reference's sweep of the
        // same weight runs beside it, dashed.
        if series.reference() {
            continue;
        }
        drawn.names.series.push(Named {
            kind: format!("series {}", series.precision),
            figures: vec![Figure {
                run: pen.run.clone(),
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
    marks.extend(
        cal.points
            .iter()
            .filter(|p| p.family != Family::Gemm)
            .map(|p| match p.family {
                Family::Stream => (p, Mark::Circle),
                _ => (p, Mark::Triangle),
            }),
    );
    marks
}

/// Measurement points, in their precision's colour, shaped by family; a point above its roof
/// beyond the noise ringed.
pub(super) fn draw_points(
    drawn: &mut Drawing,
    marks: Vec<(&roofprobe_calibration::Point, Mark)>,
    pen: &Pen,
) {
    for (p, mark) in marks {
        if !good(p.flop_per_byte) || !good(p.gflops) {
            continue;
        }
        let at = pen.axes.px((p.flop_per_byte, p.gflops));
        let size = point_size(mark);
        drawn.markers.push(Item::Marker {
            mark,
            at,
            size,
            colour: pen.colours.get(p.precision).shade(pen.style.shade),
            fill: pen.style.fill,
            dash: None,
            class: "point",
        });
        drawn.solid(at, size);
        // A point above its roof beyond the noise is suspect (the suspect flag `above_roof`): a
        // ring around it, which the legend calls ABOVE ROOF.
        if p.above_roof {
            drawn.markers.push(Item::Marker {
                mark: Mark::Circle,
                at,
                size: ABOVE_ROOF_RING,
                colour: WARNING,
                fill: Fill::Ring,
                dash: None,
                class: "above-roof",
            });
            drawn.solid(at, ABOVE_ROOF_RING);
        }
        drawn.anything = true;
    }
}
