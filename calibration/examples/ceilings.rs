//! Loads a calibration and prints its ceilings: what an estimator needs from a roofprobe run.
//!
//! ```sh
//! cargo run -p roofprobe-calibration --example ceilings -- results/<stem>.json
//! ```

use roofprobe_calibration::Calibration;

fn main() {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!(
            "usage: ceilings CALIBRATION.json (written by `roofprobe run` or `roofprobe export`)"
        );
        std::process::exit(2);
    };
    let cal = match Calibration::load(&path) {
        Ok(cal) => cal,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    println!("{}", cal.title());
    println!("spec: {}", cal.spec.describe());
    let figure = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"));
    // A ceiling set by a row the run flagged is not to be trusted without a rerun.
    let suspect = |case: &Option<String>| {
        if case.as_deref().is_some_and(|c| cal.is_suspect(c)) {
            "  SUSPECT"
        } else {
            ""
        }
    };
    for m in &cal.memory_ceilings {
        println!(
            "{:<16} {:>12} GB/s      spec {:>10}  set by {}{}",
            m.level.as_str(),
            figure(m.gbps),
            figure(m.spec_gbps),
            m.case.as_deref().unwrap_or("no valid row"),
            suspect(&m.case)
        );
    }
    for c in &cal.compute_ceilings {
        let unit = if c.precision.is_integer() {
            "GOP/s"
        } else {
            "GFLOP/s"
        };
        println!(
            "{:<16} {:>12} {unit:<9} spec {:>10}  set by {}{}",
            c.label(),
            figure(c.gflops),
            figure(c.spec_gflops),
            c.case.as_deref().unwrap_or("not measured"),
            suspect(&c.case)
        );
    }
    for r in cal
        .ridge_points
        .iter()
        .filter(|r| r.flop_per_byte.is_some())
    {
        println!(
            "ridge {} × {} {}: {} FLOP/byte",
            r.memory.as_str(),
            r.family,
            r.precision,
            figure(r.flop_per_byte)
        );
    }
}
