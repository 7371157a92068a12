//! The roofline picture (render::svg): what it says, how it marks what, and that it stays
//! readable (no text on another, on a point, a ridge or a roof, or off the plot) in every
//! picture of [`pictures`]; the browser checks the same pictures with its own text boxes
//! (svg_browser.rs). The snapshot is under tests/snapshots/.

use roofprobe::analysis::calibration::Calibration;
use roofprobe::analysis::fixtures::{
    a100_like_run, calibration, committed_run, h100_like_run, row, synthetic_run,
};
use roofprobe::analysis::roofline::gemm_series;
use roofprobe::cases::{ops, Family, Precision};
use roofprobe::render::svg::axis::{log_label, log_ticks, TICK_PX};
use roofprobe::render::svg::labels::{self, text_width, Shape, Xy};
use roofprobe::render::svg::picture::{marker_extent, wrap, Fill, Item, Mark, Picture};
use roofprobe::render::svg::*;
use roofprobe::results::record::Record;

#[test]
fn ticks_and_rates() {
    assert_eq!(log_label(0.01), "0.01");
    assert_eq!(log_label(0.05), "0.05");
    assert_eq!(log_label(1.0), "1");
    assert_eq!(log_label(20.0), "20");
    assert_eq!(log_label(10_000.0), "10000");
    assert_eq!(log_label(100_000.0), "1e5");
    assert_eq!(log_label(1e7), "1e7");
    assert_eq!(log_label(5e7), "5e7");
    assert_eq!(log_label(f64::NAN), "");
    assert_eq!(bandwidth(23.24), "23.2 GB/s");
    assert_eq!(arithmetic(19_500.0, Precision::F32), "19.5 TFLOP/s");
    assert_eq!(arithmetic(850.0, Precision::F64), "850 GFLOP/s");
    assert_eq!(arithmetic(624_000.0, Precision::S8S32), "624 TOP/s");
    assert_eq!(arithmetic(474.0, Precision::I32), "474 GOP/s");
}

#[test]
fn log_ticks_fit_their_labels() {
    let width = |v: f64| text_width(&log_label(v), TICK_PX);
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

fn cal() -> Calibration {
    calibration(&synthetic_run())
}

fn a100() -> Calibration {
    calibration(&a100_like_run())
}

fn h100() -> Calibration {
    calibration(&h100_like_run())
}

/// A real run in results/ (this repository's host runs).
pub fn real(stamp: &str) -> Calibration {
    calibration(&committed_run(stamp))
}

/// Every picture the readability tests look at: the real host runs alone and overlaid, and
/// the synthetic GPU-like ones.
pub fn pictures() -> Vec<(&'static str, Vec<Calibration>)> {
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
        (
            "gpu-gemm",
            vec![with_gemm(a100_like_run(), 1560.0, 18_700.0)],
        ),
        (
            "gpu-gemm-overlay",
            vec![
                with_gemm(a100_like_run(), 1560.0, 18_700.0),
                with_gemm(h100_like_run(), 2900.0, 60_000.0),
            ],
        ),
    ]
}

/// A GPU-like run with the GEMM rows a CUDA plan gives a large device, synthetic (no
/// measurement): the square sweep in bf16.f32 and f16.f32 and the bf16.f32 batch sweep of
/// every Llama weight, cuBLAS before ours on each shape, each at a share of its roof (the
/// DRAM roof, and the bf16 tensor peak: 14.8 × the f32 peak `gflops`, as in
/// [`gpu_like_run`]).
fn with_gemm(mut rows: Vec<Record>, gbps: f64, gflops: f64) -> Calibration {
    use roofprobe::cases::gemm;
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
                roofprobe::analysis::roofline::attainable_gflops(intensity, gbps, gflops * 14.8);
            // cuBLAS near the roof, ours a little under it, both lower for small products
            let small = (shape.flops() as f64 / 1e12).min(1.0).powf(0.15);
            let share = if case.kernel == gemm::GPU_OURS {
                0.7
            } else {
                0.85
            } * small;
            let mut r =
                roofprobe::analysis::fixtures::gemm_row(&case.kernel, p, shape, roof * share, true);
            r.run_id.clone_from(&first.run_id);
            r.device_name.clone_from(&first.device_name);
            r.compute_capability.clone_from(&first.compute_capability);
            r.units = first.units;
            r.ratio_to_reference = roofprobe::run::runner::ratio_to_reference(&r, &rows);
            rows.push(r);
        }
    }
    calibration(&rows)
}

/// The GPU-like A100 run with suspect flags on its DRAM, f32 and tensor rows (names say
/// SUSPECT) and its f32 sweep points above their roof (rings).
fn suspect_a100() -> Calibration {
    let mut rows = a100_like_run();
    for r in &mut rows {
        let flagged = (r.family == Family::Stream && r.kernel == "triad")
            || (r.family == Family::Peak && r.precision == Precision::F32)
            || r.family == Family::Tensor;
        if flagged {
            r.flags = "high_cv(12.3%)".into();
        }
    }
    let mut c = calibration(&rows);
    for p in &mut c.points {
        p.above_roof = p.family == Family::Intensity && p.precision == Precision::F32;
    }
    c
}

/// What is wrong with a picture, in words: texts that touch each other or leave the
/// picture, labels off the plot, texts on a point, a ridge or a roof line.
pub fn readability_faults(p: &Picture) -> Vec<String> {
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
/// every picture (the layout's own boxes; the browser's are checked in svg_browser.rs).
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
    use roofprobe::analysis::fixtures::gemm_row;
    use roofprobe::cases::gemm::{self, Shape};
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
            r.ratio_to_reference = roofprobe::run::runner::ratio_to_reference(&r, &records);
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
    let cal = calibration(&records);
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
            Some(roofprobe::cases::Param::Count(4096)),
            (bytes, 0),
            bytes as f64 / (gbps * 1e9),
            true,
        ));
    }
    let svg = render(&[calibration(&records)]).unwrap();
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
    let mut c = calibration(&rows);
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
    roofprobe::analysis::fixtures::retime(tensor, flops / 400_000e9);
    let svg = render(&[calibration(&rows)]).unwrap();
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
        roofprobe::analysis::fixtures::invalidate(r, "[0] is NaN, should be 1");
        r.backend = roofprobe::device::BackendKind::Host;
    }
    let svg = render(&[calibration(&rows)]).unwrap();
    assert!(svg.contains("no valid measurement to plot"));
    assert!(svg.contains("0 of 12 cases valid; 12 invalid case(s) not plotted"));
    assert!(render(&[]).is_err());
}

/// The watch's trail (render::svg::trail), pinned byte for byte on a fixed job: two phases
/// (bandwidth, then compute) over measured and spec roofs of DRAM and a tensor pipe, and the
/// same device under a signal that places no sample. The snapshots are under tests/snapshots/;
/// a change to the trail's drawing shows there, and a refactor shows it changed nothing.
#[test]
fn the_watch_trail_is_pinned() {
    use roofprobe::backend::watch::Signal;
    use roofprobe::render::svg::trail;
    use roofprobe::results::timeline::TimelineRow;

    let summary = roofprobe::analysis::fixtures::watch_summary();
    // the samples wander about each phase's median, so the trail is a line, not two dots
    let rows: Vec<TimelineRow> = (0..10)
        .map(|i| {
            let wobble = 1.0 + 0.1 * ((i * 7 % 5) as f64 - 2.0);
            TimelineRow {
                t_s: i as f64,
                compute_pipe: "tensor bf16.f32".into(),
                flop_per_byte: Some(if i < 5 { 10.0 } else { 300.0 } * wobble),
                compute_gflops: Some(if i < 5 { 30_000.0 } else { 500_000.0 } / wobble),
                verdict: if i < 5 { "bandwidth" } else { "compute" }.into(),
                ..TimelineRow::default()
            }
        })
        .collect();
    let refs: Vec<&TimelineRow> = rows.iter().collect();
    insta::assert_snapshot!("watch_trail", trail::render(&summary, &refs).unwrap());
    let mut coarse = summary;
    coarse.signal = Signal::Utilisation;
    insta::assert_snapshot!(
        "watch_trail_no_samples",
        trail::render(&coarse, &[]).unwrap()
    );
}
