//! What the labels of the roofline say, and where each may go: the names of roofs, ridges and
//! GEMM batch sweeps (one name for the things drawn on top of each other, in one run or
//! several), and for each its candidate spots for [`super::labels::place`]: along a memory roof,
//! near a compute roof's end or in a column of names beside the plot, around a ridge marker or
//! a sweep's last point.
//!
//! It must not place anything itself or draw anything.

use crate::render::svg::labels::{text_width, Anchor, Label, Spot, Xy, ASCENT_EM, DESCENT_EM};
use crate::render::svg::picture::{centred_baseline, Rgb};

/// Size of the labels in the plot, px.
pub const LABEL_PX: f64 = 12.0;

/// Where a name goes; its spots follow once its text is final (see [`merge`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Place {
    /// Along a sloped memory roof from `a` to `z`.
    Along { a: Xy, z: Xy, prefer_below: bool },
    /// Near the right end of a horizontal compute roof from `a` to `z`, or in the column of
    /// names right of the plot starting at `column` px.
    RoofEnd {
        a: Xy,
        z: Xy,
        measured: bool,
        column: Option<f64>,
    },
    /// Beside a ridge marker.
    Beside { at: Xy, size: f64, measured: bool },
    /// Beside the first point (M = 1) of a GEMM batch sweep.
    SeriesEnd { at: Xy, size: f64 },
}

/// One roof's (or ridge's) figure in a name: `[B]`, `f32`, `545`, `GFLOP/s`, ` measured`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Figure {
    /// The run's letter in an overlay.
    pub run: Option<String>,
    /// What it is: `f32`, `DRAM spec`, `ridge`.
    pub stem: String,
    pub value: String,
    pub unit: String,
    /// What follows the unit: ` measured`, ` (stream/triad/f32)`, `, not measured`.
    pub tail: String,
}

/// The most characters of a figure's stem or tail a picture shows.
pub(crate) const FIGURE_TEXT_CHARS: usize = 96;

impl Figure {
    pub fn new(
        run: Option<String>,
        stem: impl Into<String>,
        value_and_unit: &str,
        tail: impl Into<String>,
    ) -> Figure {
        let (value, unit) = value_and_unit
            .rsplit_once(' ')
            .unwrap_or((value_and_unit, ""));
        // Names come from files and can be any length: each is measured at every spot tried,
        // and one beyond the plot's width fits nowhere anyway.
        let clip = |s: String| crate::text::clipped(&s, FIGURE_TEXT_CHARS).into_owned();
        Figure {
            run,
            stem: clip(stem.into()),
            value: value.to_string(),
            unit: unit.to_string(),
            tail: clip(tail.into()),
        }
    }
}

/// The name of a line (or a ridge) in the plot: the figure of each roof drawn there.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Named {
    /// How the thing is drawn (`compute measured`, `memory spec`, `ridge measured`): only
    /// names of things drawn alike merge.
    pub kind: String,
    pub figures: Vec<Figure>,
    pub place: Place,
    pub colour: Rgb,
}

/// Roofs (or ridges) of several runs closer than this, px, are one line to the eye: one name.
const COINCIDE_PX: f64 = 5.0;

impl Named {
    fn coincides(&self, other: &Named) -> bool {
        // Ridges on one spot share a name, whichever roofs they belong to (the name then says
        // whose each figure is); lines only with lines drawn alike.
        let ridges = matches!(
            (self.place, other.place),
            (Place::Beside { .. }, Place::Beside { .. })
        );
        if self.kind != other.kind && !ridges {
            return false;
        }
        match (self.place, other.place) {
            (Place::Along { a, z, .. }, Place::Along { a: a2, z: z2, .. }) => {
                // Distance of the other line's ends from this line.
                let (dx, dy) = (z.0 - a.0, z.1 - a.1);
                let len = dx.hypot(dy);
                let off = |p: Xy| ((p.0 - a.0) * dy - (p.1 - a.1) * dx).abs() / len;
                len > 0.0 && off(a2).max(off(z2)) <= COINCIDE_PX
            }
            (Place::RoofEnd { z, .. }, Place::RoofEnd { z: z2, .. }) => {
                (z.1 - z2.1).abs() <= COINCIDE_PX
            }
            (Place::Beside { at, .. }, Place::Beside { at: at2, .. })
            | (Place::SeriesEnd { at, .. }, Place::SeriesEnd { at: at2, .. }) => {
                (at.0 - at2.0).hypot(at.1 - at2.1) <= 2.0 * COINCIDE_PX
            }
            _ => false,
        }
    }

    /// `f32 545 GFLOP/s`; several roofs on one line, grouped by figure: `[A] f32 541 · [B] 545
    /// GFLOP/s`, `[A,B] ridge 10.1 OP/B`, `f32, tensor f64.f64 18.7 TFLOP/s · i32 18.1 TOP/s`.
    /// Control characters (a case id is text from a file) are written out as `\u{1b}`, so the
    /// box the placement measures holds what is drawn.
    pub fn text(&self) -> String {
        crate::text::one_line(&self.composed()).into_owned()
    }

    fn composed(&self) -> String {
        match self.place {
            Place::Beside { .. } => return ridge_text(&self.figures),
            Place::SeriesEnd { .. } => return series_text(&self.figures),
            _ => {}
        }
        // Figures that read the same, in order of first appearance: their runs and stems.
        let mut groups: Vec<(&Figure, Vec<&str>, Vec<&str>)> = Vec::new();
        for (f, stem) in self.figures.iter().map(|f| (f, &f.stem)) {
            let same = |g: &&mut (&Figure, Vec<&str>, Vec<&str>)| {
                g.0.value == f.value && g.0.unit == f.unit && g.0.tail == f.tail
            };
            let group = match groups.iter_mut().find(same) {
                Some(g) => g,
                None => {
                    groups.push((f, Vec::new(), Vec::new()));
                    groups.last_mut().expect("just pushed")
                }
            };
            if let Some(run) = &f.run {
                if !group.1.contains(&run.as_str()) {
                    group.1.push(run);
                }
            }
            if !group.2.contains(&stem.as_str()) {
                group.2.push(stem);
            }
        }
        let Some(first) = groups.first().map(|g| g.0) else {
            return String::new();
        };
        let shared = groups
            .iter()
            .all(|g| g.0.unit == first.unit && g.0.tail == first.tail);
        let mut said: Option<String> = None;
        let parts: Vec<String> = groups
            .iter()
            .map(|(f, runs, stems)| {
                let who = if runs.is_empty() {
                    String::new()
                } else {
                    format!("[{}] ", runs.join(","))
                };
                // A stem is said once for the groups that follow with the same one.
                let stem = join_stems(stems);
                let stem_text = if said.as_deref() == Some(stem.as_str()) {
                    String::new()
                } else {
                    format!("{stem} ")
                };
                said = Some(stem);
                let own = if shared {
                    String::new()
                } else {
                    format!(" {}{}", f.unit, f.tail)
                };
                format!("{who}{stem_text}{}{own}", f.value)
            })
            .collect();
        if shared {
            format!("{} {}{}", parts.join(" · "), first.unit, first.tail)
        } else {
            parts.join(" · ")
        }
    }

    pub fn label(&self) -> Label {
        let text = self.text();
        match self.place {
            Place::Along { a, z, prefer_below } => along_roof(&text, a, z, prefer_below),
            Place::RoofEnd {
                a,
                z,
                measured,
                column,
            } => roof_name(&text, a, z, measured, column),
            Place::Beside { at, size, measured } => beside_marker(&text, at, size, measured),
            // left of the sweep's first point first (the sweep runs up and to the right), and
            // a longer leader line than a ridge's: sweeps start close together
            Place::SeriesEnd { at, size } => Label {
                leader_max: 220.0,
                ..beside_marker(&text, at, size, false)
            },
        }
    }
}

/// The name of ridges on one spot: `ridge 11.6 FLOP/B`; several roofs' ridges by unit, a span
/// where they differ (`ridge 185–187 FLOP/B · 12.1 OP/B`: which roof has which is in the
/// table); several runs each with its letter (`[A] ridge 11.7 · [B] 11.6 FLOP/B`), or together
/// where they agree (`[A,B] ridge 10.1 OP/B`).
fn ridge_text(figures: &[Figure]) -> String {
    let mut runs: Vec<Option<&str>> = Vec::new();
    for f in figures {
        if !runs.contains(&f.run.as_deref()) {
            runs.push(f.run.as_deref());
        }
    }
    // For each run, its figures by unit: (unit, lowest, highest).
    let spans: Vec<Vec<(&str, &str, &str)>> = runs
        .iter()
        .map(|run| {
            let mut by_unit: Vec<(&str, &str, &str)> = Vec::new();
            for f in figures.iter().filter(|f| f.run.as_deref() == *run) {
                let v = |s: &str| s.parse::<f64>().unwrap_or(f64::NAN);
                match by_unit.iter_mut().find(|(u, ..)| *u == f.unit) {
                    Some((_, lo, hi)) => {
                        if v(&f.value) < v(lo) {
                            *lo = &f.value;
                        }
                        if v(&f.value) > v(hi) {
                            *hi = &f.value;
                        }
                    }
                    None => by_unit.push((&f.unit, &f.value, &f.value)),
                }
            }
            by_unit
        })
        .collect();
    let span = |(_, lo, hi): &(&str, &str, &str)| {
        if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}–{hi}")
        }
    };
    let said = |by_unit: &[(&str, &str, &str)]| -> String {
        by_unit
            .iter()
            .map(|s| format!("{} {}", span(s), s.0))
            .collect::<Vec<_>>()
            .join(" · ")
    };
    let tag = |run: Option<&str>| run.map_or_else(String::new, |r| format!("[{r}] "));
    if spans.iter().all(|s| *s == spans[0]) {
        let letters: Vec<&str> = runs.iter().flatten().copied().collect();
        let who = if letters.is_empty() {
            String::new()
        } else {
            format!("[{}] ", letters.join(","))
        };
        return format!("{who}ridge {}", said(&spans[0]));
    }
    // Runs that differ, one unit each and the same: `[A] ridge 11.7 · [B] 11.6 FLOP/B`.
    let unit = spans[0].first().map(|s| s.0);
    if spans.iter().all(|s| s.len() == 1 && Some(s[0].0) == unit) {
        let parts: Vec<String> = runs
            .iter()
            .zip(&spans)
            .enumerate()
            .map(|(k, (run, s))| {
                let stem = if k == 0 { "ridge " } else { "" };
                format!("{}{stem}{}", tag(*run), span(&s[0]))
            })
            .collect();
        return format!("{} {}", parts.join(" · "), unit.unwrap_or_default());
    }
    runs.iter()
        .zip(&spans)
        .map(|(run, s)| format!("{}ridge {}", tag(*run), said(s)))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The name of GEMM batch sweeps starting on one spot: `N×K 14336×4096`; several weights in
/// one name (`N×K 4096×14336, 14336×4096`); several runs' with their letters, together where
/// they name the same weights (`[A,B] N×K …`), else one after the other (`[A] N×K 4096×4096 ·
/// [B] N×K 8192×8192`).
fn series_text(figures: &[Figure]) -> String {
    // each run's weights, in order of first appearance
    let mut runs: Vec<(Option<&str>, Vec<&str>)> = Vec::new();
    for f in figures {
        let run = f.run.as_deref();
        let i = match runs.iter().position(|(r, _)| *r == run) {
            Some(i) => i,
            None => {
                runs.push((run, Vec::new()));
                runs.len() - 1
            }
        };
        if !runs[i].1.contains(&f.value.as_str()) {
            runs[i].1.push(&f.value);
        }
    }
    // runs that name the same weights, together
    let mut groups: Vec<(Vec<&str>, &Vec<&str>)> = Vec::new();
    for (run, weights) in &runs {
        match groups.iter_mut().find(|(_, w)| *w == weights) {
            Some((letters, _)) => letters.extend(*run),
            None => groups.push((run.iter().copied().collect(), weights)),
        }
    }
    let stem = figures.first().map_or("", |f| f.stem.as_str());
    groups
        .iter()
        .map(|(letters, weights)| {
            let who = if letters.is_empty() {
                String::new()
            } else {
                format!("[{}] ", letters.join(","))
            };
            format!("{who}{stem} {}", weights.join(", "))
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// Stems said together, their common first and last words once: `tensor f16.f32 spec` and
/// `tensor bf16.f32 spec` make `tensor f16.f32, bf16.f32 spec`.
fn join_stems(stems: &[&str]) -> String {
    let words: Vec<Vec<&str>> = stems.iter().map(|s| s.split(' ').collect()).collect();
    let Some(shortest) = words.iter().map(Vec::len).min() else {
        return String::new();
    };
    if words.len() == 1 {
        return stems[0].to_string();
    }
    let first = &words[0];
    let mut head = 0;
    while head < shortest && words.iter().all(|w| w[head] == first[head]) {
        head += 1;
    }
    let mut tail = 0;
    while tail < shortest - head
        && words
            .iter()
            .all(|w| w[w.len() - 1 - tail] == first[first.len() - 1 - tail])
    {
        tail += 1;
    }
    let middles: Vec<String> = words
        .iter()
        .map(|w| w[head..w.len() - tail].join(" "))
        .collect();
    [
        first[..head].join(" "),
        middles.join(", "),
        first[first.len() - tail..].join(" "),
    ]
    .into_iter()
    .filter(|p| !p.is_empty())
    .collect::<Vec<_>>()
    .join(" ")
}

/// One name for the things of one kind that several runs draw on top of each other (`[A] f32
/// 541 · [B] 545 GFLOP/s measured`). Returns the names kept, and for each name given
/// the index of the kept name that carries it.
pub(crate) fn merge(named: Vec<Named>) -> (Vec<Named>, Vec<usize>) {
    let mut kept: Vec<Named> = Vec::new();
    let mut carried_by = Vec::with_capacity(named.len());
    for n in named {
        match kept.iter().position(|k| k.coincides(&n)) {
            Some(k) => {
                kept[k].figures.extend(n.figures);
                carried_by.push(k);
            }
            None => {
                carried_by.push(kept.len());
                kept.push(n);
            }
        }
    }
    (kept, carried_by)
}

/// Distances, px, tried between a roof and the near edge of its name: close first, then far
/// enough to clear points on the line, then stacked over another name.
const GAPS: [f64; 8] = [3.0, 6.0, 10.0, 14.0, 19.0, 24.0, 30.0, 36.0];

/// Spots along a sloped memory roof from `a` to `z` (px): left to right, above or below, a
/// little or further off the line; the text must lie along the line, not past its ends.
fn along_roof(text: &str, a: Xy, z: Xy, prefer_below: bool) -> Label {
    let (dx, dy) = (z.0 - a.0, z.1 - a.1);
    let length = dx.hypot(dy);
    let (ux, uy) = (dx / length, dy / length);
    let angle = uy.atan2(ux).to_degrees();
    let w = text_width(text, LABEL_PX);
    let mut spots = Vec::new();
    for step in 0..16 {
        let along = 6.0 + f64::from(step) * 0.06 * length;
        if along + w > length - 4.0 {
            break;
        }
        for (k, gap) in GAPS.into_iter().enumerate() {
            for below in [false, true] {
                let off = if below {
                    gap + ASCENT_EM * LABEL_PX
                } else {
                    -gap - DESCENT_EM * LABEL_PX
                };
                // The baseline's offset across the line: the text's own "down", turned.
                let at = (a.0 + along * ux - off * uy, a.1 + along * uy + off * ux);
                let side = if below == prefer_below { 0.0 } else { 1.5 };
                spots.push(Spot {
                    at,
                    anchor: Anchor::Start,
                    angle_deg: angle,
                    cost: f64::from(step) + side + k as f64 * 2.0,
                    leader: None,
                });
            }
        }
    }
    // Leader lines may start anywhere along the roof, the left part first.
    let anchors = (1..6)
        .map(|k| {
            let f = f64::from(k) / 6.0;
            (a.0 + f * dx, a.1 + f * dy)
        })
        .collect();
    Label {
        text: text.to_string(),
        size_px: LABEL_PX,
        spots,
        anchors,
        anchor_gap: 3.0,
        leader_max: 150.0,
        fold_into: None,
    }
}

/// Spots for a horizontal roof's name, from `a` (its left end) to `z` (the right edge): right
/// aligned near the right end, then further left, over or under the line (measured names
/// prefer under, spec names over), a little or further off it. With a column of names right of
/// the plot (from `column` px), there instead: level with the line's end, else above or below,
/// joined to it by a leader line.
fn roof_name(text: &str, a: Xy, z: Xy, measured: bool, column: Option<f64>) -> Label {
    let y = a.1;
    let mut spots = Vec::new();
    if let Some(x) = column {
        let centred = centred_baseline(y, LABEL_PX) - y;
        for k in -100..=100 {
            let dy = f64::from(k) * 3.0;
            let leader = Some(((z.0 + 2.0, y), (x - 3.0, y + dy)));
            spots.push(Spot {
                leader,
                ..Spot::flat((x, y + dy + centred), Anchor::Start, dy.abs())
            });
        }
        return Label {
            text: text.to_string(),
            size_px: LABEL_PX,
            spots,
            anchors: Vec::new(),
            anchor_gap: 0.0,
            leader_max: 150.0,
            fold_into: None,
        };
    }
    for step in 0..24 {
        let right = z.0 - 6.0 - f64::from(step) * 30.0;
        // At least the end of the text over its own roof; the rest may overhang its start
        // where nothing else is.
        if right < a.0 + 40.0 {
            break;
        }
        for (k, gap) in GAPS.into_iter().enumerate() {
            for below in [false, true] {
                let base = if below {
                    y + gap + ASCENT_EM * LABEL_PX
                } else {
                    y - gap - DESCENT_EM * LABEL_PX
                };
                let side = if below == measured { 0.0 } else { 1.5 };
                spots.push(Spot::flat(
                    (right, base),
                    Anchor::End,
                    f64::from(step) * 0.7 + side + k as f64 * 2.0,
                ));
            }
        }
    }
    Label {
        text: text.to_string(),
        size_px: LABEL_PX,
        spots,
        // Leader lines may start anywhere along the roof, the right end first.
        anchors: (0..12)
            .map(|k| (z.0 - 2.0 - 60.0 * f64::from(k), y))
            .take_while(|p| p.0 > a.0 + 8.0)
            .collect(),
        anchor_gap: 3.0,
        leader_max: 150.0,
        fold_into: None,
    }
}

/// Spots around a ridge marker of circumradius `size` at `at`: its four corners first
/// (measured: right and under the compute roof; spec: left and over it), then its sides.
fn beside_marker(text: &str, at: Xy, size: f64, measured: bool) -> Label {
    let (x, y) = at;
    let mut spots = Vec::new();
    // Each ring a little further out than the last.
    for (ring, extra) in [0.0, 8.0, 16.0].into_iter().enumerate() {
        let off = size + 4.0 + extra;
        let over = y - off - DESCENT_EM * LABEL_PX + 2.0;
        let under = y + off + ASCENT_EM * LABEL_PX - 2.0;
        let right_below = Spot::flat((x + off, under), Anchor::Start, 0.0);
        let right_above = Spot::flat((x + off, over), Anchor::Start, 0.0);
        let left_above = Spot::flat((x - off, over), Anchor::End, 0.0);
        let left_below = Spot::flat((x - off, under), Anchor::End, 0.0);
        let corners = if measured {
            [right_below, right_above, left_above, left_below]
        } else {
            [left_above, left_below, right_above, right_below]
        };
        let middle = centred_baseline(y, LABEL_PX);
        let sides = [
            Spot::flat((x + off + 2.0, middle), Anchor::Start, 0.0),
            Spot::flat((x - off - 2.0, middle), Anchor::End, 0.0),
            Spot::flat(
                (x, y - off - 4.0 - DESCENT_EM * LABEL_PX),
                Anchor::Middle,
                0.0,
            ),
            Spot::flat(
                (x, y + off + 4.0 + ASCENT_EM * LABEL_PX),
                Anchor::Middle,
                0.0,
            ),
        ];
        for (k, mut spot) in corners.into_iter().chain(sides).enumerate() {
            spot.cost = k as f64 * 0.5 + ring as f64 * 4.0;
            spots.push(spot);
        }
    }
    Label {
        text: text.to_string(),
        size_px: LABEL_PX,
        spots,
        // A short leader line at most: a ridge with no room near its marker is named in its
        // roof's name.
        anchors: vec![at],
        anchor_gap: size + 3.0,
        leader_max: 120.0,
        fold_into: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::svg::picture::INK;

    #[test]
    fn names_merge_only_when_their_lines_coincide() {
        let named = |run: &str, y: f64, value: &str| Named {
            kind: "compute measured".into(),
            figures: vec![Figure::new(
                Some(run.into()),
                "f32",
                &format!("{value} GFLOP/s"),
                "",
            )],
            place: Place::RoofEnd {
                a: (500.0, y),
                z: (1000.0, y),
                measured: true,
                column: None,
            },
            colour: INK,
        };
        let (kept, carriers) = merge(vec![
            named("A", 100.0, "541"),
            named("B", 103.0, "545"),
            named("C", 140.0, "700"),
        ]);
        assert_eq!(carriers, [0, 0, 1]);
        assert_eq!(kept[0].text(), "[A] f32 541 · [B] 545 GFLOP/s");
        assert_eq!(kept[1].text(), "[C] f32 700 GFLOP/s");
        let (kept, _) = merge(vec![named("A", 100.0, "541"), named("B", 100.0, "541")]);
        assert_eq!(kept[0].text(), "[A,B] f32 541 GFLOP/s");
        // Roofs of one run on one line: each named, figures that agree said once.
        let roof = |stem: &str, value_and_unit: &str| Named {
            kind: "compute measured".into(),
            figures: vec![Figure::new(None, stem, value_and_unit, "")],
            ..named("A", 100.0, "1")
        };
        let (kept, _) = merge(vec![
            roof("f32", "18.7 TFLOP/s"),
            roof("tensor f64.f64", "18.7 TFLOP/s"),
            roof("i32", "18.1 TOP/s"),
        ]);
        assert_eq!(
            kept[0].text(),
            "f32, tensor f64.f64 18.7 TFLOP/s · i32 18.1 TOP/s"
        );
        // A spec roof on the same line is drawn otherwise: its own name.
        let spec = Named {
            kind: "compute spec".into(),
            ..roof("f32 spec", "19.5 TFLOP/s")
        };
        assert_eq!(merge(vec![roof("f32", "18.7 TFLOP/s"), spec]).0.len(), 2);
    }

    #[test]
    fn ridges_on_one_spot() {
        let ridge = |run: Option<&str>, value_and_unit: &str| {
            Figure::new(run.map(str::to_string), "ridge", value_and_unit, "")
        };
        assert_eq!(
            ridge_text(&[ridge(None, "11.6 FLOP/B")]),
            "ridge 11.6 FLOP/B"
        );
        // f16.f32 and bf16.f32 on one spot, and an integer roof beside them
        assert_eq!(
            ridge_text(&[
                ridge(None, "187 FLOP/B"),
                ridge(None, "185 FLOP/B"),
                ridge(None, "12.1 OP/B")
            ]),
            "ridge 185–187 FLOP/B · 12.1 OP/B"
        );
        assert_eq!(
            ridge_text(&[
                ridge(Some("A"), "11.7 FLOP/B"),
                ridge(Some("B"), "11.6 FLOP/B")
            ]),
            "[A] ridge 11.7 · [B] 11.6 FLOP/B"
        );
        assert_eq!(
            ridge_text(&[ridge(Some("A"), "10.1 OP/B"), ridge(Some("B"), "10.1 OP/B")]),
            "[A,B] ridge 10.1 OP/B"
        );
        assert_eq!(
            join_stems(&["tensor f16.f32 spec", "tensor bf16.f32 spec"]),
            "tensor f16.f32, bf16.f32 spec"
        );
        assert_eq!(
            join_stems(&["f32", "tensor f64.f64"]),
            "f32, tensor f64.f64"
        );
    }
}
