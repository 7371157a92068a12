//! Label placement for the roofline picture, and the little geometry it needs.
//!
//! One rule: labels are placed one at a time, in the order given, and each takes the cheapest of
//! its candidate spots whose text box stays [`CLEARANCE`] px inside the field's border and
//! [`CLEARANCE`] px away from every obstacle (roof lines, point and ridge markers) and from every
//! label and leader line already placed. A label with no clear spot is offered spots on rings
//! around its anchor, joined to it by a leader line; failing that it is folded into another
//! label's text (a ridge into its roof's name) and the placement starts again; failing that it
//! comes back unplaced, for the caller to list outside the plot. So nothing this module places
//! touches anything else: a collision costs infinity, and the costs of the spots only say which
//! clear spot is preferred.
//!
//! Text is laid out by the viewer, not here, so a text's box is an estimate that must never be
//! smaller than what the viewer draws: per-character advances of the wider of DejaVu Sans and
//! Liberation Sans (Arial's metrics), 5 % over, measured in headless Chromium with
//! `getComputedTextLength()`; ascent and descent cover both fonts' `getBBox()`.
//!
//! Pure geometry: it must not know what a roof or a device is, and it writes no SVG.

use std::collections::HashMap;

/// A pixel position, SVG convention: x to the right, y down.
pub type Xy = (f64, f64);

/// Gap, px, that a placed label keeps from the border, obstacles and other labels.
pub const CLEARANCE: f64 = 2.0;

/// Height above the baseline of a text's box, in em (Chromium's `getBBox()`: 0.93 for DejaVu
/// Sans, 0.91 for Liberation Sans).
pub const ASCENT_EM: f64 = 0.95;
/// Depth below the baseline of a text's box, in em (0.24 and 0.21 measured).
pub const DESCENT_EM: f64 = 0.25;

/// Advance widths of ASCII 32 (space) to 126 (`~`), thousandths of an em: the wider of DejaVu
/// Sans and Liberation Sans at 100 px in Chromium, plus 5 %, rounded up.
const ADVANCE_MILLI_EM: [u16; 95] = [
    334, 421, 484, 880, 669, 998, 819, 289, 410, 410, 525, 880, 334, 379, 334, 354, //
    669, 669, 669, 669, 669, 669, 669, 669, 669, 669, 354, 354, 880, 880, 880, 585, //
    1066, 719, 721, 759, 809, 701, 642, 817, 790, 310, 525, 701, 586, 906, 786, 827, //
    701, 827, 759, 701, 642, 769, 719, 1039, 720, 701, 720, 410, 354, 410, 880, 585, //
    525, 644, 667, 559, 667, 596, 370, 667, 666, 292, 292, 609, 292, 1023, 666, 585, //
    667, 667, 404, 548, 412, 666, 622, 859, 622, 622, 552, 669, 354, 669, 880,
];

/// Estimated advance width of `text` at `size_px`: never less than DejaVu Sans or Liberation
/// Sans draw it; a character outside the table counts as a full em plus 5 %.
pub fn text_width(text: &str, size_px: f64) -> f64 {
    let milli: u32 = text
        .chars()
        .map(|c| match c {
            ' '..='~' => u32::from(ADVANCE_MILLI_EM[c as usize - 32]),
            '·' => 334,
            '–' => 585,
            '×' | '≥' | '≤' => 880,
            _ => 1050,
        })
        .sum();
    f64::from(milli) / 1000.0 * size_px
}

/// How a text hangs off its anchor point (SVG `text-anchor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    pub fn as_svg(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// A place a text may go: its baseline anchor point, how it hangs off it, its turn, and how much
/// it is preferred (lower cost first).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spot {
    pub at: Xy,
    pub anchor: Anchor,
    /// Turn about `at`, degrees clockwise (SVG `rotate`).
    pub angle_deg: f64,
    pub cost: f64,
    /// A line from what the label names to the text, where the spot is away from it.
    pub leader: Option<(Xy, Xy)>,
}

impl Spot {
    pub fn flat(at: Xy, anchor: Anchor, cost: f64) -> Spot {
        Spot {
            at,
            anchor,
            angle_deg: 0.0,
            cost,
            leader: None,
        }
    }
}

/// The box the viewer draws `text` in at `spot` (estimated, see [`text_width`]): four corners,
/// turned with the text.
pub fn text_box(text: &str, size_px: f64, spot: &Spot) -> Shape {
    let w = text_width(text, size_px);
    let left = match spot.anchor {
        Anchor::Start => 0.0,
        Anchor::Middle => -w / 2.0,
        Anchor::End => -w,
    };
    let (top, bottom) = (-ASCENT_EM * size_px, DESCENT_EM * size_px);
    let (sin, cos) = spot.angle_deg.to_radians().sin_cos();
    let turn = |(x, y): Xy| (spot.at.0 + x * cos - y * sin, spot.at.1 + x * sin + y * cos);
    Shape(vec![
        turn((left, top)),
        turn((left + w, top)),
        turn((left + w, bottom)),
        turn((left, bottom)),
    ])
}

/// A convex shape in px: a polygon (corners in order), a segment (two ends) or a point.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape(pub Vec<Xy>);

impl Shape {
    pub fn segment(a: Xy, b: Xy) -> Shape {
        Shape(vec![a, b])
    }

    /// An axis-aligned square around `centre`: a marker's extent.
    pub fn square(centre: Xy, half: f64) -> Shape {
        let (x, y) = centre;
        Shape::rect(x - half, y - half, x + half, y + half)
    }

    pub fn rect(left: f64, top: f64, right: f64, bottom: f64) -> Shape {
        Shape(vec![
            (left, top),
            (right, top),
            (right, bottom),
            (left, bottom),
        ])
    }

    /// Whether some straight line separates the two shapes with at least `gap` px between them
    /// (the separating-axis test over both shapes' edge normals and the x and y axes). It errs
    /// on the safe side: shapes this calls close may be up to `gap`·√2 apart at a corner.
    pub fn apart(&self, other: &Shape, gap: f64) -> bool {
        // The x and y axes first: most pairs are far apart, and this is all it takes.
        let (al, at, ar, ab) = self.bounds();
        let (bl, bt, br, bb) = other.bounds();
        if bl - ar >= gap || al - br >= gap || bt - ab >= gap || at - bb >= gap {
            return true;
        }
        let separates = |(ax, ay): Xy| {
            let project = |s: &Shape| {
                s.0.iter()
                    .map(|&(x, y)| x * ax + y * ay)
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                        (lo.min(v), hi.max(v))
                    })
            };
            let (a_lo, a_hi) = project(self);
            let (b_lo, b_hi) = project(other);
            b_lo - a_hi >= gap || a_lo - b_hi >= gap
        };
        normals(&self.0).any(separates) || normals(&other.0).any(separates)
    }

    /// The smallest axis-aligned rectangle holding the shape: (left, top, right, bottom).
    pub fn bounds(&self) -> (f64, f64, f64, f64) {
        self.0.iter().fold(
            (
                f64::INFINITY,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NEG_INFINITY,
            ),
            |(l, t, r, b), &(x, y)| (l.min(x), t.min(y), r.max(x), b.max(y)),
        )
    }
}

/// Unit normals of a polygon's edges (one for a segment, none for a point).
fn normals(corners: &[Xy]) -> impl Iterator<Item = Xy> + '_ {
    let n = corners.len();
    let edges = match n {
        0 | 1 => 0,
        2 => 1,
        _ => n,
    };
    (0..edges).filter_map(move |i| {
        let (ax, ay) = corners[i];
        let (bx, by) = corners[(i + 1) % n];
        let (dx, dy) = (bx - ax, by - ay);
        let len = dx.hypot(dy);
        (len > 1e-9).then(|| (-dy / len, dx / len))
    })
}

/// Something a label must keep clear of.
#[derive(Clone, Debug, PartialEq)]
pub struct Obstacle {
    pub shape: Shape,
    /// A leader line may cross it (a roof line), at a cost; a marker it may not.
    pub crossable: bool,
}

/// Where labels may go: the border they stay inside, and what they keep clear of.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// (left, top, right, bottom), px.
    pub border: (f64, f64, f64, f64),
    pub obstacles: Vec<Obstacle>,
}

/// A text to place.
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub text: String,
    pub size_px: f64,
    /// The spots it may take, each with its cost.
    pub spots: Vec<Spot>,
    /// Points on what the label names (a ridge marker, a roof's end, points along a roof), the
    /// first preferred, where a leader line may start; none: no leader line for this label.
    pub anchors: Vec<Xy>,
    /// How far from its anchor a leader line starts, px (clear of the marker it names).
    pub anchor_gap: f64,
    /// The longest leader line it may have, px.
    pub leader_max: f64,
    /// The label (by index) whose text takes this one's where neither a spot nor a leader line
    /// is clear.
    pub fold_into: Option<usize>,
}

/// A label that found a clear spot.
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    /// Its text, with any label folded into it.
    pub text: String,
    pub size_px: f64,
    pub spot: Spot,
    /// The text's estimated box at the spot.
    pub outline: Shape,
    /// From near the anchor to the text, where it is away from what it names.
    pub leader: Option<(Xy, Xy)>,
}

/// What became of a label.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Placed(Placed),
    /// Its text is in label `into`'s.
    Folded {
        into: usize,
    },
    /// No clear spot anywhere, and nothing to fold into: the caller shows it elsewhere.
    Unplaced {
        text: String,
    },
}

/// Places the labels, one at a time in the order given (see the module doc for the rule).
pub fn place(labels: &[Label], field: &Field) -> Vec<Outcome> {
    let mut texts: Vec<String> = labels.iter().map(|l| l.text.clone()).collect();
    let mut folded = vec![false; labels.len()];
    // Labels that tried to fold and made their host homeless: they stay unplaced.
    let mut tried = vec![false; labels.len()];
    let mut cache = Cache::new();
    let mut outcomes = greedy(labels, &texts, &folded, field, &mut cache);
    loop {
        // The first label with no room that can fold does, and everything is placed again:
        // its host's text is longer now, and may want another spot.
        let fold = outcomes.iter().enumerate().find_map(|(i, o)| match o {
            Outcome::Unplaced { .. } if !tried[i] => labels[i]
                .fold_into
                .filter(|&j| j != i && j < labels.len() && !folded[j])
                .map(|j| (i, j)),
            _ => None,
        });
        let Some((i, j)) = fold else {
            return outcomes;
        };
        tried[i] = true;
        let joined = format!("{} · {}", texts[j], texts[i]);
        let host_text = std::mem::replace(&mut texts[j], joined);
        folded[i] = true;
        let attempt = greedy(labels, &texts, &folded, field, &mut cache);
        let host_placed = matches!(attempt[j], Outcome::Placed(_));
        let lost = |o: &[Outcome]| {
            o.iter()
                .filter(|o| matches!(o, Outcome::Unplaced { .. }))
                .count()
        };
        if host_placed && lost(&attempt) < lost(&outcomes) {
            outcomes = attempt;
        } else {
            // The longer name finds no room, or pushes another label out: undo.
            texts[j] = host_text;
            folded[i] = false;
        }
    }
}

/// A spot worked out for a text: its box, and its leader line as a shape.
#[derive(Clone, Debug)]
struct Placement {
    spot: Spot,
    /// The spot's cost, and 40 for each roof line its leader crosses.
    cost: f64,
    outline: Shape,
    leader: Option<Shape>,
}

impl Placement {
    /// Whether this fit and `other` keep clear of each other: each text [`CLEARANCE`] from the
    /// other text and leader; leaders never crossing (they may run close, as those of roofs a
    /// few pixels apart do where they leave their lines).
    fn clear_of(&self, other: &Placement) -> bool {
        let apart = |a: &Option<Shape>, b: &Shape| a.as_ref().is_none_or(|a| a.apart(b, CLEARANCE));
        self.outline.apart(&other.outline, CLEARANCE)
            && apart(&other.leader, &self.outline)
            && apart(&self.leader, &other.outline)
            && match (&self.leader, &other.leader) {
                (Some(a), Some(b)) => a.apart(b, 0.0),
                _ => true,
            }
    }
}

/// A label's spots that nothing fixed (border, obstacles) is in the way of, cheapest first: the
/// same whatever else is placed, so worked out once per text.
struct Open {
    spots: Vec<Placement>,
    /// Spots joined to an anchor by a leader line; worked out when first needed.
    leaders: Option<Vec<Placement>>,
}

type Cache = HashMap<(usize, String), Open>;

/// The spots among `spots` that nothing fixed is in the way of: the text inside the border and
/// clear of the obstacles, a leader line clear of markers (a roof line it may cross, at a
/// cost); cheapest first.
fn open_fits(
    spots: impl IntoIterator<Item = Spot>,
    text: &str,
    size_px: f64,
    field: &Field,
) -> Vec<Placement> {
    let (l, t, r, b) = field.border;
    let mut out: Vec<Placement> = spots
        .into_iter()
        .filter_map(|spot| {
            let outline = text_box(text, size_px, &spot);
            let (sl, st, sr, sb) = outline.bounds();
            let inside = sl >= l + CLEARANCE
                && st >= t + CLEARANCE
                && sr <= r - CLEARANCE
                && sb <= b - CLEARANCE;
            if !inside
                || !field
                    .obstacles
                    .iter()
                    .all(|o| o.shape.apart(&outline, CLEARANCE))
            {
                return None;
            }
            let leader = spot.leader.map(|(a, b)| Shape::segment(a, b));
            let mut crossings = 0;
            if let Some(line) = &leader {
                for o in &field.obstacles {
                    if !o.shape.apart(line, 1.0) {
                        if !o.crossable {
                            return None;
                        }
                        crossings += 1;
                    }
                }
            }
            Some(Placement {
                spot,
                cost: spot.cost + 40.0 * f64::from(crossings),
                outline,
                leader,
            })
        })
        .collect();
    out.sort_by(|a, b| a.cost.total_cmp(&b.cost));
    out
}

fn greedy(
    labels: &[Label],
    texts: &[String],
    folded: &[bool],
    field: &Field,
    cache: &mut Cache,
) -> Vec<Outcome> {
    let key = |i: usize| (i, texts[i].clone());
    for (i, label) in labels.iter().enumerate() {
        cache.entry(key(i)).or_insert_with(|| Open {
            spots: open_fits(label.spots.iter().copied(), &texts[i], label.size_px, field),
            leaders: None,
        });
    }
    let mut taken: Vec<Option<Placement>> = vec![None; labels.len()];
    // The placed labels `fit` comes too close to, but for `except`.
    let blocking =
        |taken: &[Option<Placement>], fit: &Placement, except: Option<usize>| -> Vec<usize> {
            taken
                .iter()
                .enumerate()
                .filter(|(j, p)| Some(*j) != except && p.as_ref().is_some_and(|p| !fit.clear_of(p)))
                .map(|(j, _)| j)
                .collect()
        };
    for (i, label) in labels.iter().enumerate() {
        if folded[i] {
            continue;
        }
        let open = &cache[&key(i)];
        // The cheapest clear spot.
        if let Some(fit) = open
            .spots
            .iter()
            .find(|f| blocking(&taken, f, None).is_empty())
        {
            taken[i] = Some(fit.clone());
            continue;
        }
        // Else the cheapest spot that one placed label is in the way of, where that label has
        // another clear spot to move to.
        let moved = open.spots.iter().find_map(|fit| {
            let [j] = blocking(&taken, fit, None)[..] else {
                return None;
            };
            let current = taken[j].as_ref()?;
            let to = cache[&key(j)].spots.iter().find(|f| {
                f.spot != current.spot && f.clear_of(fit) && blocking(&taken, f, Some(j)).is_empty()
            })?;
            Some((j, to.clone(), fit.clone()))
        });
        if let Some((j, to, fit)) = moved {
            taken[j] = Some(to);
            taken[i] = Some(fit);
            continue;
        }
        // Else the cheapest clear spot joined to one of its anchors by a leader line.
        let open = cache.get_mut(&key(i)).expect("filled above");
        let leaders = open.leaders.get_or_insert_with(|| {
            let spots = label.anchors.iter().enumerate().flat_map(|(k, &anchor)| {
                leader_spots(
                    &texts[i],
                    label.size_px,
                    anchor,
                    label.anchor_gap,
                    label.leader_max,
                )
                .into_iter()
                .map(move |mut s| {
                    s.cost += 5.0 * k as f64;
                    s
                })
            });
            open_fits(spots, &texts[i], label.size_px, field)
        });
        taken[i] = leaders
            .iter()
            .find(|f| blocking(&taken, f, None).is_empty())
            .cloned();
    }
    labels
        .iter()
        .enumerate()
        .map(|(i, label)| {
            if folded[i] {
                return Outcome::Folded {
                    into: label.fold_into.unwrap_or(i),
                };
            }
            match &taken[i] {
                Some(f) => Outcome::Placed(Placed {
                    text: texts[i].clone(),
                    size_px: label.size_px,
                    spot: f.spot,
                    outline: f.outline.clone(),
                    leader: f.spot.leader,
                }),
                None => Outcome::Unplaced {
                    text: texts[i].clone(),
                },
            }
        })
        .collect()
}

/// Horizontal and vertical steps, px, of the grid of spots tried around an anchor for a text
/// joined to it by a leader line.
const LEADER_STEP: Xy = (30.0, 12.0);

/// Flat spots on a grid around `anchor`, each with its leader line (from `start` px off the
/// anchor to a pixel short of the text's box, at most `max_len` long), cheapest with the
/// shortest leader; every one costs more than a spot a caller offers (those are meant to cost
/// under 1000).
fn leader_spots(text: &str, size_px: f64, anchor: Xy, start: f64, max_len: f64) -> Vec<Spot> {
    let w = text_width(text, size_px);
    let h = (ASCENT_EM + DESCENT_EM) * size_px;
    let steps = |reach: f64, step: f64| {
        let n = (reach / step) as i32;
        (-n..=n).map(move |k| f64::from(k) * step)
    };
    let mut out = Vec::new();
    for dx in steps(max_len + w / 2.0, LEADER_STEP.0) {
        for dy in steps(max_len + h / 2.0, LEADER_STEP.1) {
            let centre = (anchor.0 + dx, anchor.1 + dy);
            let (l, t) = (centre.0 - w / 2.0, centre.1 - h / 2.0);
            let near = (anchor.0.clamp(l, l + w), anchor.1.clamp(t, t + h));
            let (ex, ey) = (near.0 - anchor.0, near.1 - anchor.1);
            let len = ex.hypot(ey);
            // Too near to need a leader, or too far to read as one.
            if len < start + 10.0 || len > max_len {
                continue;
            }
            let baseline = centre.1 + (ASCENT_EM - DESCENT_EM) * size_px / 2.0;
            let mut spot = Spot::flat((centre.0, baseline), Anchor::Middle, 1000.0 + len);
            let from = (anchor.0 + ex / len * start, anchor.1 + ey / len * start);
            let to = (
                anchor.0 + ex / len * (len - 3.0),
                anchor.1 + ey / len * (len - 3.0),
            );
            spot.leader = Some((from, to));
            out.push(spot);
        }
    }
    out
}

/// Every pair of placed texts (and leaders) that come closer than `gap` px, by index: what a
/// test of a whole picture asserts is empty.
pub fn collisions(shapes: &[Shape], gap: f64) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (i, a) in shapes.iter().enumerate() {
        for (j, b) in shapes.iter().enumerate().skip(i + 1) {
            if !a.apart(b, gap) {
                out.push((i, j));
            }
        }
    }
    out
}
