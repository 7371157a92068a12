//! The picture as data: lines, markers and texts, each with the class a browser check reads
//! (`roof`, `point`, `ridge`, `label`, …), and their SVG. Every text keeps the spot it was
//! placed at, so its box ([`super::labels::text_box`]) can be checked against everything else.
//! Also the small layout that needs no placement: word wrap, the legend's rows of entries, and
//! how the runs of an overlay are told apart.
//!
//! It must not decide what a roofline shows: [`crate::render::svg`] does.

use crate::render::svg::labels::{text_width, Anchor, Shape, Spot, Xy, ASCENT_EM, DESCENT_EM};
use std::fmt::Write;

/// Font stack: Arial's metrics first (narrow, everywhere), DejaVu Sans where there is no Arial;
/// [`super::labels::text_width`] covers the wider of the two.
pub const FONT: &str = "Arial, Helvetica, 'Liberation Sans', 'DejaVu Sans', sans-serif";

/// An sRGB colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    pub fn hex(self) -> String {
        format!("#{:02X}{:02X}{:02X}", self.0, self.1, self.2)
    }

    /// Each channel times `f` (below 1: darker).
    pub fn shade(self, f: f64) -> Rgb {
        let c = |v: u8| (f64::from(v) * f).round().clamp(0.0, 255.0) as u8;
        Rgb(c(self.0), c(self.1), c(self.2))
    }
}

pub const WHITE: Rgb = Rgb(255, 255, 255);
/// Text and axes.
pub const INK: Rgb = Rgb(34, 34, 34);
/// Secondary text.
pub const GREY: Rgb = Rgb(90, 90, 90);
/// What must not be taken at face value: a point above its roof, a run with nothing valid.
pub const WARNING: Rgb = Rgb(190, 0, 0);
/// Radius, px, of the ring drawn around a point above its roof.
pub const ABOVE_ROOF_RING: f64 = 9.5;

/// How a marker is filled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fill {
    Solid,
    Hollow,
    /// The colour at a third of its strength.
    Tint,
    /// Outline only, nothing filled: a ring drawn around another marker.
    Ring,
}

/// A marker's shape; the size is its circumradius (a square's and a cross's half width), px.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mark {
    Circle,
    Triangle,
    Diamond,
    /// A GEMM of ours.
    Square,
    /// A GEMM of a reference implementation (cuBLAS, the `gemm` crate): a plus sign.
    Cross,
}

/// One element of the picture. `class` goes into the SVG, so a check in a browser can tell roofs
/// and points from grid lines and legend swatches.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Line {
        points: Vec<Xy>,
        stroke: Rgb,
        width: f64,
        dash: Option<&'static str>,
        class: &'static str,
    },
    Marker {
        mark: Mark,
        at: Xy,
        size: f64,
        colour: Rgb,
        fill: Fill,
        dash: Option<&'static str>,
        class: &'static str,
    },
    Text {
        text: String,
        size: f64,
        spot: Spot,
        colour: Rgb,
        class: &'static str,
    },
}

impl Item {
    /// A text; control characters (from a device name, a case id, a file) are written out as
    /// `\u{1b}` here, before anything measures its box, so the box holds what is drawn.
    pub fn text(
        text: impl Into<String>,
        size: f64,
        spot: Spot,
        colour: Rgb,
        class: &'static str,
    ) -> Item {
        let text: String = text.into();
        Item::Text {
            text: crate::text::one_line(&text).into_owned(),
            size,
            spot,
            colour,
            class,
        }
    }

    pub fn line(a: Xy, b: Xy, stroke: Rgb, width: f64, class: &'static str) -> Item {
        Item::Line {
            points: vec![a, b],
            stroke,
            width,
            dash: None,
            class,
        }
    }
}

/// The size of a point's marker by shape: the shapes look alike in area.
pub(crate) fn point_size(mark: Mark) -> f64 {
    match mark {
        Mark::Circle => 4.5,
        Mark::Square | Mark::Cross => 4.5,
        Mark::Triangle | Mark::Diamond => 6.0,
    }
}

/// Stroke width, px, of a GEMM batch sweep's line (thinner than a roof's).
pub(crate) const SERIES_WIDTH: f64 = 1.2;

/// The extent a marker covers, stroke included.
pub fn marker_extent(at: Xy, size: f64) -> Shape {
    Shape::square(at, size + 1.0)
}

/// The whole picture as data: what [`super::render`] writes, and what the tests measure.
#[derive(Clone, Debug)]
pub struct Picture {
    pub width: f64,
    pub height: f64,
    /// Where its labels may go: the plot, and the column of names right of it if there is one.
    #[cfg_attr(not(test), allow(dead_code))] // the tests hold the labels to it
    pub label_border: (f64, f64, f64, f64),
    /// Labels with no room anywhere, listed under the legend.
    pub unplaced: usize,
    /// The widest name of a compute roof, px, and how many there are: how wide and tall a
    /// column of names must be.
    pub widest_roof_name: f64,
    pub roof_names: usize,
    pub items: Vec<Item>,
}

impl Picture {
    /// Every text with its class and its estimated box (what the readability checks measure).
    pub fn text_boxes(&self) -> Vec<(&'static str, &str, Shape)> {
        self.items
            .iter()
            .filter_map(|i| match i {
                Item::Text {
                    text,
                    size,
                    spot,
                    class,
                    ..
                } => Some((
                    *class,
                    text.as_str(),
                    crate::render::svg::labels::text_box(text, *size, spot),
                )),
                _ => None,
            })
            .collect()
    }

    pub fn to_svg(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" font-family=\"{FONT}\">",
            w = self.width,
            h = self.height.ceil()
        );
        let _ = writeln!(
            s,
            "<rect width=\"{w}\" height=\"{h}\" fill=\"#FFFFFF\"/>",
            w = self.width,
            h = self.height.ceil()
        );
        for item in &self.items {
            write_item(&mut s, item);
        }
        s.push_str("</svg>\n");
        s
    }
}

fn n(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_string)
}

fn dash_attr(dash: Option<&str>) -> String {
    dash.map_or_else(String::new, |d| format!(" stroke-dasharray=\"{d}\""))
}

fn write_item(s: &mut String, item: &Item) {
    match item {
        Item::Line {
            points,
            stroke,
            width,
            dash,
            class,
        } => {
            let pts: Vec<String> = points
                .iter()
                .map(|&(x, y)| format!("{},{}", n(x), n(y)))
                .collect();
            let _ = writeln!(
                s,
                "<polyline class=\"{class}\" points=\"{}\" fill=\"none\" stroke=\"{}\" \
                 stroke-width=\"{}\"{}/>",
                pts.join(" "),
                stroke.hex(),
                n(*width),
                dash_attr(*dash)
            );
        }
        Item::Marker {
            mark,
            at,
            size,
            colour,
            fill,
            dash,
            class,
        } => {
            let (fill_attr, stroke, stroke_width) = match fill {
                Fill::Solid => (colour.hex(), INK.hex(), 0.8),
                Fill::Hollow => (WHITE.hex(), colour.hex(), 1.6),
                Fill::Tint => (
                    format!("{}\" fill-opacity=\"0.35", colour.hex()),
                    colour.hex(),
                    1.4,
                ),
                Fill::Ring => ("none".to_string(), colour.hex(), 1.6),
            };
            let paint = format!(
                "fill=\"{fill_attr}\" stroke=\"{stroke}\" stroke-width=\"{stroke_width}\"{}",
                dash_attr(*dash)
            );
            let (x, y) = *at;
            match mark {
                Mark::Circle => {
                    let _ = writeln!(
                        s,
                        "<circle class=\"{class}\" cx=\"{}\" cy=\"{}\" r=\"{}\" {paint}/>",
                        n(x),
                        n(y),
                        n(*size)
                    );
                }
                Mark::Triangle | Mark::Diamond | Mark::Square | Mark::Cross => {
                    let r = *size;
                    // a cross's arms are 2/5 of its width thick
                    let t = 0.4 * r;
                    let corners = match mark {
                        Mark::Triangle => vec![
                            (x, y - r),
                            (x + 0.866 * r, y + 0.5 * r),
                            (x - 0.866 * r, y + 0.5 * r),
                        ],
                        Mark::Diamond => vec![(x, y - r), (x + r, y), (x, y + r), (x - r, y)],
                        Mark::Square => {
                            vec![
                                (x - r, y - r),
                                (x + r, y - r),
                                (x + r, y + r),
                                (x - r, y + r),
                            ]
                        }
                        _ => vec![
                            (x - t, y - r),
                            (x + t, y - r),
                            (x + t, y - t),
                            (x + r, y - t),
                            (x + r, y + t),
                            (x + t, y + t),
                            (x + t, y + r),
                            (x - t, y + r),
                            (x - t, y + t),
                            (x - r, y + t),
                            (x - r, y - t),
                            (x - t, y - t),
                        ],
                    };
                    let pts: Vec<String> = corners
                        .iter()
                        .map(|&(x, y)| format!("{},{}", n(x), n(y)))
                        .collect();
                    let _ = writeln!(
                        s,
                        "<polygon class=\"{class}\" points=\"{}\" {paint}/>",
                        pts.join(" ")
                    );
                }
            }
        }
        Item::Text {
            text,
            size,
            spot,
            colour,
            class,
        } => {
            let (x, y) = spot.at;
            let turn = if spot.angle_deg == 0.0 {
                String::new()
            } else {
                format!(
                    " transform=\"rotate({:.2} {} {})\"",
                    spot.angle_deg,
                    n(x),
                    n(y)
                )
            };
            let _ = writeln!(
                s,
                "<text class=\"{class}\" x=\"{}\" y=\"{}\"{turn} text-anchor=\"{}\" \
                 font-size=\"{}\" fill=\"{}\">{}</text>",
                n(x),
                n(y),
                spot.anchor.as_svg(),
                n(*size),
                colour.hex(),
                xml_escape(text)
            );
        }
    }
}

/// Escapes text for an SVG text node or attribute; control characters (which XML 1.0 does not
/// allow at all) are written out as `\u{1b}` (already done by [`Item::text`]; this is the last
/// guard for a text built otherwise; the fleet's strip plots use it too).
pub(crate) fn xml_escape(s: &str) -> String {
    crate::text::one_line(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The most characters [`wrap`] lays out (about ten lines of a header).
const WRAP_CHARS: usize = 1_000;

/// Greedy word wrap to `max_px` at `size_px`, of the text as it will be drawn (control
/// characters written out).
pub fn wrap(text: &str, size_px: f64, max_px: f64) -> Vec<String> {
    // A header of a few lines at most: text from a file can be any length.
    let text = crate::text::one_line(text);
    let text = crate::text::clipped(&text, WRAP_CHARS);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if line.is_empty() || text_width(&candidate, size_px) <= max_px {
            line = candidate;
        } else {
            lines.push(std::mem::take(&mut line));
            line = word.to_string();
        }
        // A single word wider than the line is cut.
        while text_width(&line, size_px) > max_px && line.chars().count() > 1 {
            let mut head = String::new();
            for c in line.chars() {
                head.push(c);
                if text_width(&head, size_px) > max_px {
                    head.pop();
                    break;
                }
            }
            let rest = line[head.len()..].to_string();
            lines.push(head);
            line = rest;
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Baseline of a text whose box is vertically centred on `y`.
pub(crate) fn centred_baseline(y: f64, size: f64) -> f64 {
    y + (ASCENT_EM - DESCENT_EM) * size / 2.0
}

/// How the runs of an overlay are told apart: the same colours, shaded; lines thinner; markers
/// solid, hollow or tinted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RunStyle {
    pub shade: f64,
    pub line_scale: f64,
    pub fill: Fill,
}

/// The style of run `i` of an overlay.
pub(crate) fn run_style(i: usize) -> RunStyle {
    match i % 3 {
        0 => RunStyle {
            shade: 1.0,
            line_scale: 1.0,
            fill: Fill::Solid,
        },
        1 => RunStyle {
            shade: 0.6,
            line_scale: 0.6,
            fill: Fill::Hollow,
        },
        _ => RunStyle {
            shade: 0.8,
            line_scale: 0.6,
            fill: Fill::Tint,
        },
    }
}

/// A legend entry's little picture.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Swatch {
    None,
    /// A run of an overlay: its line weight and marker fill.
    Run(RunStyle),
    /// A ceiling line, solid or dashed.
    Stroke(Option<&'static str>),
    Ridge(Option<&'static str>),
    Point(Mark),
    /// A GEMM batch sweep: a thin line through two points (dashed: a reference's).
    Series(Mark, Option<&'static str>),
    /// The ring around a point above its roof.
    AboveRoof,
    Block(Rgb),
}

/// Legend entries flowing left to right in rows under the plot.
pub(crate) struct Legend {
    /// Where rows start and must end, px.
    left: f64,
    right: f64,
    x: f64,
    /// Middle of the current row.
    y: f64,
    used: bool,
}

/// Legend text size and row height, px.
const LEGEND_PX: f64 = 12.0;
const LEGEND_ROW: f64 = 19.0;
const SWATCH_W: f64 = 26.0;

impl Legend {
    pub fn new(left: f64, right: f64, top: f64) -> Legend {
        Legend {
            left,
            right,
            x: left,
            y: top + LEGEND_ROW / 2.0,
            used: false,
        }
    }

    pub fn newline(&mut self) {
        if self.used {
            self.y += LEGEND_ROW;
            self.x = self.left;
            self.used = false;
        }
    }

    pub fn gap(&mut self, px: f64) {
        self.y += px;
    }

    pub fn bottom(&self) -> f64 {
        let rows = if self.used { 0.5 } else { -0.5 };
        self.y + rows * LEGEND_ROW
    }

    /// An entry on its own row (wrapped where long).
    pub fn row(&mut self, items: &mut Vec<Item>, swatch: Swatch, text: &str, colour: Rgb) {
        self.newline();
        let indent = if swatch == Swatch::None {
            0.0
        } else {
            SWATCH_W + 6.0
        };
        let lines = wrap(text, LEGEND_PX, self.right - self.left - indent);
        for (k, line) in lines.iter().enumerate() {
            let s = if k == 0 { swatch } else { Swatch::None };
            self.x = self.left;
            self.draw(items, s, indent, line, colour);
            self.used = true;
            self.newline();
        }
    }

    /// An entry after the previous one, on a new row when the row is full.
    pub fn entry(&mut self, items: &mut Vec<Item>, swatch: Swatch, text: &str, colour: Rgb) {
        let indent = SWATCH_W + 6.0;
        let w = indent + text_width(text, LEGEND_PX);
        if self.used && self.x + w > self.right {
            self.newline();
        }
        self.draw(items, swatch, indent, text, colour);
        self.x += w + 18.0;
        self.used = true;
    }

    fn draw(&self, items: &mut Vec<Item>, swatch: Swatch, indent: f64, text: &str, colour: Rgb) {
        let (x, y) = (self.x, self.y);
        let mid = (x + SWATCH_W / 2.0, y);
        let stroke = |dash, width: f64| Item::Line {
            points: vec![(x, y), (x + SWATCH_W, y)],
            stroke: INK,
            width,
            dash,
            class: "swatch",
        };
        let marker = |mark, size, fill, dash| Item::Marker {
            mark,
            at: mid,
            size,
            colour: GREY,
            fill,
            dash,
            class: "swatch",
        };
        match swatch {
            Swatch::None => {}
            Swatch::Run(style) => {
                items.push(Item::Line {
                    points: vec![(x, y), (x + SWATCH_W, y)],
                    stroke: INK.shade(style.shade),
                    width: 2.6 * style.line_scale,
                    dash: None,
                    class: "swatch",
                });
                items.push(Item::Marker {
                    mark: Mark::Circle,
                    at: mid,
                    size: 4.5,
                    colour: Rgb(31, 119, 180).shade(style.shade),
                    fill: style.fill,
                    dash: None,
                    class: "swatch",
                });
            }
            Swatch::Stroke(dash) => {
                items.push(stroke(dash, if dash.is_some() { 1.8 } else { 2.6 }))
            }
            Swatch::Ridge(dash) => items.push(marker(Mark::Diamond, 6.5, Fill::Hollow, dash)),
            Swatch::Point(mark) => {
                items.push(marker(mark, point_size(mark), Fill::Solid, None));
            }
            Swatch::Series(mark, dash) => {
                items.push(Item::Line {
                    points: vec![(x + 3.0, y + 4.0), (x + SWATCH_W - 3.0, y - 4.0)],
                    stroke: GREY,
                    width: SERIES_WIDTH,
                    dash,
                    class: "swatch",
                });
                for end in [(x + 5.0, y + 3.0), (x + SWATCH_W - 5.0, y - 3.0)] {
                    items.push(Item::Marker {
                        mark,
                        at: end,
                        size: 3.0,
                        colour: GREY,
                        fill: Fill::Solid,
                        dash: None,
                        class: "swatch",
                    });
                }
            }
            Swatch::AboveRoof => {
                items.push(marker(Mark::Triangle, 6.0, Fill::Solid, None));
                items.push(Item::Marker {
                    mark: Mark::Circle,
                    at: mid,
                    // smaller than in the plot: the legend's rows are 19 px apart
                    size: 8.0,
                    colour: WARNING,
                    fill: Fill::Ring,
                    dash: None,
                    class: "swatch",
                });
            }
            Swatch::Block(c) => items.push(Item::Line {
                points: vec![(x + 4.0, y), (x + SWATCH_W - 4.0, y)],
                stroke: c,
                width: 8.0,
                dash: None,
                class: "swatch",
            }),
        }
        items.push(Item::text(
            text,
            LEGEND_PX,
            Spot::flat(
                (x + indent, centred_baseline(y, LEGEND_PX)),
                Anchor::Start,
                0.0,
            ),
            colour,
            "legend",
        ));
    }
}
