//! The roofline SVGs held to the browser's own text boxes: each picture of the readability
//! tests is loaded in headless Chromium, every `<text>` measured with `getBBox()` (turned by
//! `getCTM()`), and the test fails on two texts that overlap, a text on a point or ridge marker
//! (or the ring around a point above its roof) or on a roof line or a GEMM sweep's line, or a
//! text wider or taller than the layout's estimate ([`roofprobe::render::svg::labels::text_width`]). Run once with the SVG's own fonts and once with each of
//! DejaVu Sans and Liberation Sans forced, the widest and the most common sans-serif metrics.
//!
//! Where Chromium is absent (looked for as `$ROOFPROBE_CHROMIUM`, then `chromium`,
//! `chromium-browser`, `google-chrome` on the PATH, then at `/usr/bin/chromium` and the other
//! places the packages install it) the test says it skipped, unless
//! `ROOFPROBE_REQUIRE_CHROMIUM=1` (CI), where that is a failure. `ROOFPROBE_KEEP_SVG=DIR` keeps
//! the SVGs it checked in DIR, to look at.
//!
//! Tests only: nothing here is part of the library.

use crate::svg::{pictures, readability_faults};
use roofprobe::render::svg::labels::{text_width, ASCENT_EM, DESCENT_EM};
use roofprobe::render::svg::{picture, render};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Collects, for every SVG in the page, its texts (corners, size, width) and what they overlap.
/// Output: JSON in `<pre id="out">`, every character outside printable ASCII and `<>&` escaped.
const CHECK_JS: &str = r#"
const corners = (el, pad) => {
  const b = el.getBBox(), m = el.getCTM();
  return [[b.x - pad, b.y - pad], [b.x + b.width + pad, b.y - pad],
          [b.x + b.width + pad, b.y + b.height + pad], [b.x - pad, b.y + b.height + pad]]
    .map(([x, y]) => { const p = new DOMPoint(x, y).matrixTransform(m); return [p.x, p.y]; });
};
const axes = (poly) => {
  const out = [[1, 0], [0, 1]];
  const n = poly.length === 2 ? 1 : poly.length;
  for (let i = 0; i < n; i++) {
    const [ax, ay] = poly[i], [bx, by] = poly[(i + 1) % poly.length];
    const len = Math.hypot(bx - ax, by - ay);
    if (len > 1e-9) out.push([-(by - ay) / len, (bx - ax) / len]);
  }
  return out;
};
// Whether two convex shapes overlap by more than a hair (0.25 px): no separating axis.
const overlap = (a, b) => {
  for (const [x, y] of axes(a).concat(axes(b))) {
    const pa = a.map(([px, py]) => px * x + py * y), pb = b.map(([px, py]) => px * x + py * y);
    if (Math.min(...pb) - Math.max(...pa) > -0.25 || Math.min(...pa) - Math.max(...pb) > -0.25)
      return false;
  }
  return true;
};
const result = [];
for (const svg of document.querySelectorAll('svg')) {
  const texts = [...svg.querySelectorAll('text')].map(el => ({
    text: el.textContent, cls: el.getAttribute('class') || '',
    size: parseFloat(el.getAttribute('font-size')),
    width: el.getBBox().width, height: el.getBBox().height,
    family: getComputedStyle(el).fontFamily, box: corners(el, 0) }));
  const markers = [...svg.querySelectorAll('.point, .ridge, .above-roof')].map(el => corners(el, 0));
  // Roof lines, and each segment of a GEMM sweep's line (a polyline is not convex).
  const roofs = [...svg.querySelectorAll('polyline.roof, polyline.series')].flatMap(el => {
    const pts = el.getAttribute('points').trim().split(/\s+/).map(p => p.split(',').map(Number));
    return pts.slice(1).map((p, i) => [pts[i], p]);
  });
  const faults = [];
  // the picture's own box: a text cut off at an edge is unreadable
  const vb = svg.viewBox.baseVal;
  const [w, h] = vb && vb.width > 0 ? [vb.width, vb.height]
    : [parseFloat(svg.getAttribute('width')), parseFloat(svg.getAttribute('height'))];
  texts.forEach(t => {
    if (t.box.some(([x, y]) => x < -0.25 || y < -0.25 || x > w + 0.25 || y > h + 0.25))
      faults.push(`text "${t.text}" leaves the picture (${w}x${h}) at ${JSON.stringify(t.box)}`);
  });
  texts.forEach((t, i) => {
    texts.slice(i + 1).forEach(u => {
      if (overlap(t.box, u.box)) faults.push(`text "${t.text}" overlaps text "${u.text}"`);
    });
    markers.forEach((m, k) => {
      if (overlap(t.box, m)) faults.push(`text "${t.text}" overlaps marker ${k} at ${m[0]}`);
    });
    roofs.forEach((r, k) => {
      if (overlap(t.box, r)) faults.push(`text "${t.text}" overlaps roof ${k} ${JSON.stringify(r)}`);
    });
  });
  result.push({ id: svg.parentElement.id, texts: texts.map(({box, ...t}) => t),
                markers: markers.length, roofs: roofs.length, faults });
}
document.getElementById('out').textContent = JSON.stringify(result).replace(/[^\x20-\x7e]|[<>&]/g,
  c => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
"#;

#[derive(Debug, Deserialize)]
struct Measured {
    id: String,
    texts: Vec<TextBox>,
    markers: usize,
    roofs: usize,
    faults: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct TextBox {
    text: String,
    cls: String,
    size: f64,
    width: f64,
    height: f64,
    family: String,
}

/// The Chromium to run, if there is one.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ROOFPROBE_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let names = [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ];
    // PATH first; then where Debian's and Google's packages put it, for a PATH that lacks it.
    let fixed = [
        "/usr/bin/chromium",
        "/usr/lib/chromium/chromium",
        "/usr/bin/google-chrome",
    ];
    names
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .chain(fixed.iter().map(PathBuf::from))
        .find(|p| p.is_file())
}

/// Chromium, or why the browser checks skip (a failure where `ROOFPROBE_REQUIRE_CHROMIUM=1`).
fn chromium_or_skip(test: &str) -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        let required = std::env::var("ROOFPROBE_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "{test}: no Chromium found on PATH ({:?}) or where the packages put it (set \
             ROOFPROBE_CHROMIUM), and ROOFPROBE_REQUIRE_CHROMIUM=1",
            std::env::var_os("PATH").unwrap_or_default()
        );
        eprintln!("skipped {test}: no Chromium found (install chromium or set ROOFPROBE_CHROMIUM)");
    }
    found
}

/// Loads the SVGs, inline in one page, in headless Chromium, with every text in `font` where
/// given, and returns what the page measured.
fn measure(
    chromium: &Path,
    dir: &Path,
    svgs: &[(String, String)],
    font: Option<&str>,
) -> Vec<Measured> {
    let style = font.map_or_else(String::new, |f| {
        format!("<style>svg text {{ font-family: '{f}' !important; }}</style>")
    });
    let mut html =
        format!("<!DOCTYPE html><html><head><meta charset=\"utf-8\">{style}</head><body>");
    for (id, svg) in svgs {
        html.push_str(&format!("<div id=\"{id}\">{svg}</div>"));
    }
    html.push_str(&format!(
        "<pre id=\"out\"></pre><script>{CHECK_JS}</script></body></html>"
    ));
    let page = dir.join(format!(
        "check-{}.html",
        font.unwrap_or("own").replace(' ', "-")
    ));
    std::fs::write(&page, html).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let dom_path = page.with_extension("dom");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        // A file, not a pipe: the page is bigger than a pipe holds while we wait.
        .stdout(std::fs::File::create(&dom_path).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", chromium.display()));
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(90) {
            child.kill().unwrap();
            panic!(
                "{} took over 90 s to load {}",
                chromium.display(),
                page.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let dom = std::fs::read_to_string(&dom_path).unwrap();
    let json = dom
        .split("<pre id=\"out\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| panic!("no result in Chromium's page for {}: {dom}", page.display()));
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

fn keep(name: &str, svg: &str) {
    if let Some(dir) = std::env::var_os("ROOFPROBE_KEEP_SVG") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.svg")), svg).unwrap();
    }
}

/// The issue's check, in a real browser: in every picture of the readability tests, single runs
/// and overlays, no text overlaps another text, a point or ridge marker, or a roof line, and the
/// layout's estimate of each text's box holds what the browser drew.
#[test]
fn no_text_overlaps_in_a_real_browser() {
    let Some(chromium) = chromium_or_skip("no_text_overlaps_in_a_real_browser") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let svgs: Vec<(String, String)> = pictures()
        .into_iter()
        .map(|(name, cals)| {
            let p = picture(&cals).unwrap();
            // The same pictures pass the layout's own check; this one is the browser's.
            assert_eq!(readability_faults(&p), Vec::<String>::new(), "{name}");
            let svg = render(&cals).unwrap();
            keep(name, &svg);
            (name.to_string(), svg)
        })
        .collect();
    for font in [None, Some("DejaVu Sans"), Some("Liberation Sans")] {
        let measured = measure(&chromium, dir.path(), &svgs, font);
        assert_eq!(measured.len(), svgs.len());
        for m in &measured {
            let what = format!("{} ({})", m.id, font.unwrap_or("the SVG's fonts"));
            assert!(m.texts.len() > 20 && m.roofs > 0, "{what}: {m:?}");
            assert!(m.faults.is_empty(), "{what}:\n{}", m.faults.join("\n"));
            for t in &m.texts {
                let width = text_width(&t.text, t.size);
                let height = (ASCENT_EM + DESCENT_EM) * t.size;
                assert!(
                    width >= t.width && height >= t.height,
                    "{what}: {} `{}` in {} is {}x{} px, estimated {width}x{height}",
                    t.cls,
                    t.text,
                    t.family,
                    t.width,
                    t.height
                );
            }
        }
        if let Some(font) = font {
            let used = &measured[0].texts[0].family;
            assert!(used.contains(font), "forced {font}, got {used}");
        }
        let markers: usize = measured.iter().map(|m| m.markers).sum();
        assert!(markers > 100, "{markers} markers");
    }
}

/// `roofprobe fleet`'s strip plots in a real browser: over the checked-in results, and over
/// fleets that crowd them (a slow run; a dead one far off, which squeezes the median and the
/// threshold together; many flagged runs side by side, with long run ids), no text overlaps
/// another text or a run's dot, and none leaves the picture.
#[test]
fn fleet_strip_plots_read_cleanly_in_a_real_browser() {
    use crate::fleet::run;
    use roofprobe::render::fleet::{self, DEFAULT_THRESHOLD};
    let Some(chromium) = chromium_or_skip("fleet_strip_plots_read_cleanly_in_a_real_browser")
    else {
        return;
    };
    let results: Vec<PathBuf> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("results"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "csv"))
            .collect();
    let checked_in: Vec<_> = roofprobe::analysis::inputs::load_inputs(&results, true)
        .unwrap()
        .into_iter()
        .map(|i| (i.path, i.run))
        .collect();
    let long = |n: u32| format!("gpu-node-{n:03}-cuda-3-nvidia-h200-20261130T101010Z-5f3a9c");
    let fleets = [
        ("checked-in", checked_in),
        (
            "slow",
            vec![
                run("a", 1.0),
                run("b", 1.02),
                run("c", 0.99),
                run("slow", 0.8),
            ],
        ),
        (
            "dead",
            vec![
                run("a", 1.0),
                run("b", 1.0),
                run("c", 1.01),
                run("d", 0.99),
                run("dead", 0.02),
            ],
        ),
        (
            "crowded",
            vec![
                run("a", 1.0),
                run("b", 1.0),
                run("c", 1.0),
                run("d", 1.01),
                run("e", 0.99),
                run("f", 1.0),
                run("g", 1.02),
                run(&long(17), 0.5),
                run(&long(18), 0.505),
                run(&long(19), 0.51),
                run(&long(20), 0.52),
                run(&long(21), 0.53),
                run(&long(22), 0.55),
            ],
        ),
    ];
    let mut svgs = Vec::new();
    for (name, runs) in fleets {
        let report = fleet::analyse(runs, DEFAULT_THRESHOLD);
        for (k, (metric, _)) in fleet::metric_names(&report).into_iter().enumerate() {
            let svg = fleet::strip_svg(&report, &metric).unwrap();
            let id = format!("fleet-{name}-{k}");
            keep(&id, &svg);
            svgs.push((id, svg));
        }
    }
    assert!(svgs.len() > 8, "{} strip plots", svgs.len());
    let dir = tempfile::tempdir().unwrap();
    for font in [None, Some("DejaVu Sans"), Some("Liberation Sans")] {
        let measured = measure(&chromium, dir.path(), &svgs, font);
        assert_eq!(measured.len(), svgs.len());
        for m in &measured {
            let what = format!("{} ({})", m.id, font.unwrap_or("the SVG's fonts"));
            assert!(m.texts.len() > 8 && m.markers > 0, "{what}: {m:?}");
            if m.id.starts_with("fleet-crowded") {
                // every flagged run named beside its dot
                assert!(
                    m.texts
                        .iter()
                        .filter(|t| t.text.contains("gpu-node-0"))
                        .count()
                        >= 6
                );
            }
            assert!(m.faults.is_empty(), "{what}:\n{}", m.faults.join("\n"));
        }
    }
}

/// The browser check can fail: two texts on top of each other, a text on a point and a text on
/// a roof are each reported.
#[test]
fn the_browser_check_sees_overlaps() {
    let Some(chromium) = chromium_or_skip("the_browser_check_sees_overlaps") else {
        return;
    };
    let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\" height=\"200\">\
        <text x=\"10\" y=\"20\" font-size=\"12\">[A] L3 231 GB/s</text>\
        <text x=\"30\" y=\"24\" font-size=\"12\">[B] L1 219 GB/s</text>\
        <circle class=\"point\" cx=\"100\" cy=\"80\" r=\"4\"/>\
        <text x=\"90\" y=\"84\" font-size=\"12\">on a point</text>\
        <polyline class=\"roof\" points=\"0,190 400,120\"/>\
        <text x=\"200\" y=\"160\" font-size=\"12\" transform=\"rotate(-30 200 160)\">on a roof</text>\
        <text x=\"300\" y=\"20\" font-size=\"12\">alone</text>\
        <text x=\"375\" y=\"60\" font-size=\"12\">cut off</text></svg>";
    let dir = tempfile::tempdir().unwrap();
    let measured = measure(
        &chromium,
        dir.path(),
        &[("planted".into(), svg.into())],
        None,
    );
    let faults = &measured[0].faults;
    assert_eq!(faults.len(), 4, "{faults:#?}");
    assert!(faults[0].contains("\"cut off\" leaves the picture (400x200)"));
    assert!(faults[1].contains("\"[A] L3 231 GB/s\" overlaps text \"[B] L1 219 GB/s\""));
    assert!(faults[2].contains("\"on a point\" overlaps marker"));
    assert!(faults[3].contains("\"on a roof\" overlaps roof"));
}
