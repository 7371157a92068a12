//! Label placement (render::svg::labels): no label on another, on a line or a marker, or over
//! the border; leaders, folding and the order of preference.

use roofprobe::render::svg::labels::*;

fn field(obstacles: Vec<Obstacle>) -> Field {
    Field {
        border: (0.0, 0.0, 1000.0, 600.0),
        obstacles,
    }
}

fn line(a: Xy, b: Xy) -> Obstacle {
    Obstacle {
        shape: Shape::segment(a, b),
        crossable: true,
    }
}

fn marker(at: Xy) -> Obstacle {
    Obstacle {
        shape: Shape::square(at, 5.0),
        crossable: false,
    }
}

fn placed(o: &Outcome) -> &Placed {
    match o {
        Outcome::Placed(p) => p,
        other => panic!("not placed: {other:?}"),
    }
}

/// Every placed text and leader is clear of the others, of every obstacle and of the border.
fn assert_clean(outcomes: &[Outcome], field: &Field) {
    let mut shapes = Vec::new();
    for o in outcomes {
        if let Outcome::Placed(p) = o {
            shapes.push(p.outline.clone());
            let (l, t, r, b) = p.outline.bounds();
            let (fl, ft, fr, fb) = field.border;
            assert!(
                l >= fl && t >= ft && r <= fr && b <= fb,
                "{p:?} leaves the field"
            );
            for ob in &field.obstacles {
                assert!(ob.shape.apart(&p.outline, CLEARANCE), "{p:?} on {ob:?}");
            }
            if let Some((a, b)) = p.leader {
                shapes.push(Shape::segment(a, b));
            }
        }
    }
    assert_eq!(collisions(&shapes, CLEARANCE), vec![], "{outcomes:#?}");
}

#[test]
fn separating_axes() {
    let a = Shape::rect(0.0, 0.0, 10.0, 10.0);
    assert!(!a.apart(&Shape::rect(5.0, 5.0, 15.0, 15.0), 0.0));
    assert!(a.apart(&Shape::rect(12.0, 0.0, 20.0, 10.0), 2.0));
    assert!(!a.apart(&Shape::rect(11.0, 0.0, 20.0, 10.0), 2.0));
    // a segment through the box, one beside it, one crossing its corner region diagonally
    assert!(!a.apart(&Shape::segment((-5.0, 5.0), (15.0, 5.0)), 0.0));
    assert!(a.apart(&Shape::segment((-5.0, 14.0), (15.0, 14.0)), 2.0));
    assert!(a.apart(&Shape::segment((12.0, 30.0), (30.0, 12.0)), 2.0));
    assert!(!a.apart(&Shape::segment((0.0, 19.0), (19.0, 0.0)), 0.0));
    // a box turned 45 degrees whose bounding box overlaps, though the shapes do not
    let turned = text_box(
        "0123456789",
        12.0,
        &Spot {
            at: (12.0, 30.0),
            anchor: Anchor::Start,
            angle_deg: -45.0,
            cost: 0.0,
            leader: None,
        },
    );
    let (l, t, ..) = turned.bounds();
    assert!(l < 10.0 && t < 10.0, "bounding boxes overlap: {turned:?}");
    assert!(turned.apart(&a, 1.0));
}

/// Box widths measured once in headless Chromium 148 (`getBBox()` at 13 px, DejaVu Sans
/// 2.37 and Liberation Sans 1.07): the estimate is never below either font, and not far over.
#[test]
fn text_width_is_never_below_the_browser() {
    for (text, dejavu, liberation) in [
        ("[A] L3 231 GB/s (cache/l3/i32/8192)", 232.95, 205.97),
        ("f32 545 GFLOP/s measured", 176.84, 162.59),
        ("ridge 11.6 FLOP/B", 116.30, 107.67),
        ("mmmmWWWW", 102.22, 93.13),
    ] {
        let ours = text_width(text, 13.0);
        assert!(
            ours >= dejavu && ours >= liberation,
            "{text}: {ours} < {dejavu}"
        );
        assert!(ours <= 1.1 * f64::max(dejavu, liberation), "{text}: {ours}");
    }
    assert!(text_width("µ€", 10.0) >= 20.0);
}

/// The overlay bug of issue 10: two runs' cache roofs almost on top of each other, each
/// label preferring the same spot above its line near the left. The second must go
/// elsewhere, clear of both lines and the first label.
#[test]
fn overlay_labels_on_coinciding_roofs_do_not_overlap() {
    let slope = -37.0_f64;
    let (sin, cos) = slope.to_radians().sin_cos();
    let along = |y0: f64, t: f64| (100.0 + 600.0 * t * cos, y0 + 600.0 * t * sin);
    let roofs = [500.0, 503.0, 460.0, 463.0]; // [A] L3, [B] L3, [A] L1, [B] L1
    let obstacles = roofs
        .iter()
        .map(|&y| line(along(y, 0.0), along(y, 1.0)))
        .collect();
    let field = field(obstacles);
    let spots = |y0: f64| {
        let mut spots = Vec::new();
        for (k, t) in [0.02, 0.1, 0.2, 0.3, 0.4, 0.5].into_iter().enumerate() {
            for gap in [4.0, 9.0] {
                let above = -gap - 13.0 * DESCENT_EM;
                let below = gap + 13.0 * ASCENT_EM;
                for (side, off) in [(0.0, above), (1.0, below)] {
                    // the baseline's offset across the line, turned with it
                    let (x, y) = along(y0, t);
                    spots.push(Spot {
                        at: (x - off * sin, y + off * cos),
                        anchor: Anchor::Start,
                        angle_deg: slope,
                        cost: k as f64 + side + gap / 4.0,
                        leader: None,
                    });
                }
            }
        }
        spots
    };
    let label = |text: &str, y0: f64| Label {
        text: text.into(),
        size_px: 13.0,
        spots: spots(y0),
        anchors: vec![],
        anchor_gap: 0.0,
        leader_max: 150.0,
        fold_into: None,
    };
    let labels = [
        label("[A] L3 231 GB/s (cache/l3/i32/8192)", roofs[0]),
        label("[B] L3 229 GB/s (cache/l3/i32/8192)", roofs[1]),
        label("[A] L1 1063 GB/s (cache/l1/i32/32)", roofs[2]),
        label("[B] L1 219 GB/s", roofs[3]),
    ];
    let out = place(&labels, &field);
    assert_eq!(out.len(), 4);
    for o in &out {
        placed(o);
    }
    assert_clean(&out, &field);
    // Without the rule both [A] and [B] would take their cheapest spot, on top of each other.
    let a = text_box(&labels[0].text, 13.0, &labels[0].spots[0]);
    let b = text_box(&labels[1].text, 13.0, &labels[1].spots[0]);
    assert!(!a.apart(&b, 0.0));
}

/// Three horizontal roofs 5 px apart with points sitting on them: each name finds a clear
/// spot (above the top roof, below the bottom one, further off for the middle), none on a
/// point.
#[test]
fn names_of_crowded_roofs_find_room() {
    let ys = [200.0, 205.0, 210.0];
    let mut obstacles: Vec<Obstacle> = ys.iter().map(|&y| line((300.0, y), (990.0, y))).collect();
    for x in (320..980).step_by(40) {
        obstacles.push(marker((f64::from(x), 205.0)));
    }
    let field = field(obstacles);
    let labels: Vec<Label> = ys
        .iter()
        .map(|&y| Label {
            text: format!("f32 {y} GFLOP/s measured"),
            size_px: 12.0,
            spots: [3.0, 9.0, 15.0]
                .into_iter()
                .flat_map(|gap| {
                    [
                        Spot::flat((980.0, y + gap + 12.0 * ASCENT_EM), Anchor::End, gap),
                        Spot::flat((980.0, y - gap - 12.0 * DESCENT_EM), Anchor::End, gap),
                    ]
                })
                .collect(),
            anchors: vec![(990.0, y)],
            anchor_gap: 4.0,
            leader_max: 150.0,
            fold_into: None,
        })
        .collect();
    let out = place(&labels, &field);
    for o in &out {
        placed(o);
    }
    assert_clean(&out, &field);
}

/// A label whose spots are all taken gets a leader line to a clear spot near its anchor;
/// one with nowhere at all folds into its host, or comes back unplaced.
#[test]
fn leader_then_fold_then_unplaced() {
    let blocked = Spot::flat((500.0, 300.0), Anchor::Middle, 0.0);
    let field = field(vec![marker((500.0, 296.0))]);
    let host = Label {
        text: "f32 15.0 TFLOP/s measured".into(),
        size_px: 12.0,
        spots: vec![Spot::flat((900.0, 100.0), Anchor::End, 0.0)],
        anchors: vec![],
        anchor_gap: 0.0,
        leader_max: 150.0,
        fold_into: None,
    };
    let ridge = Label {
        text: "ridge 10.0 FLOP/B".into(),
        size_px: 12.0,
        spots: vec![blocked],
        anchors: vec![(500.0, 296.0)],
        anchor_gap: 8.0,
        leader_max: 150.0,
        fold_into: Some(0),
    };
    let out = place(&[host.clone(), ridge.clone()], &field);
    let p = placed(&out[1]);
    let (from, to) = p.leader.expect("a leader line");
    assert!((from.0 - 500.0).hypot(from.1 - 296.0) >= 8.0 - 1e-9);
    assert!(
        !p.outline.apart(&Shape::square(to, 3.5), 0.0),
        "ends at the text"
    );
    assert_clean(&out, &field);

    // Boxed in by markers on every ring: folded into the host.
    let mut cage = vec![marker((500.0, 296.0))];
    for x in (0..=1000).step_by(8) {
        for y in (180..=420).step_by(8) {
            cage.push(marker((f64::from(x), f64::from(y))));
        }
    }
    let caged = self::field(cage);
    let out = place(&[host.clone(), ridge.clone()], &caged);
    assert_eq!(out[1], Outcome::Folded { into: 0 });
    assert_eq!(
        placed(&out[0]).text,
        "f32 15.0 TFLOP/s measured · ridge 10.0 FLOP/B"
    );
    assert_clean(&out, &caged);

    // Nothing to fold into.
    let alone = Label {
        fold_into: None,
        ..ridge
    };
    let out = place(&[alone], &caged);
    assert_eq!(
        out[0],
        Outcome::Unplaced {
            text: "ridge 10.0 FLOP/B".into()
        }
    );
}

#[test]
fn the_border_and_cheaper_spots_rule() {
    let field = field(vec![]);
    let label = Label {
        text: "DRAM 1500 GB/s".into(),
        size_px: 12.0,
        spots: vec![
            // cheapest, but its text runs past the right border
            Spot::flat((995.0, 100.0), Anchor::Start, 0.0),
            Spot::flat((600.0, 100.0), Anchor::Start, 2.0),
            Spot::flat((400.0, 100.0), Anchor::Start, 1.0),
        ],
        anchors: vec![],
        anchor_gap: 0.0,
        leader_max: 150.0,
        fold_into: None,
    };
    let out = place(&[label], &field);
    assert_eq!(placed(&out[0]).spot.at, (400.0, 100.0));
}
