//! `roofprobe watch`'s text and JSON: the live line per sample, the summary at the end (the
//! signal and why, the ceilings and where they came from, what the watcher cannot see, each
//! phase with its verdict, figure and remedies, the window's verdict), and the same as JSON.
//! Pure functions from the analysis to text; the command prints them.

use crate::analysis::watch::{gbps_text, gflops_text, Ceiling, DeviceSummary, Verdict};
use crate::results::timeline::TimelineRow;
use crate::units::bytes;
use serde::Serialize;

/// The JSON document's schema.
pub const SCHEMA: &str = "roofprobe-watch/1";

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{v:.0}%"))
}

/// One sample as a line, for the live view on stderr.
pub fn live_line(row: &TimelineRow) -> String {
    let mut parts = vec![format!("{:>7.1} s  {}", row.t_s, row.device_id)];
    if let (Some(used), Some(usable)) = (row.memory_used_bytes, row.memory_usable_bytes) {
        parts.push(format!("mem {} of {}", bytes(used), bytes(usable)));
    }
    if let Some(p) = row.process_memory_bytes {
        parts.push(format!("job {}", bytes(p)));
    }
    match row.signal.as_str() {
        "gpm" | "dcgm" => {
            parts.push(format!("SM {}", pct(row.sm_active_pct)));
            let dram = row
                .dram_gbps
                .map_or_else(String::new, |g| format!(" {}", gbps_text(g)));
            parts.push(format!("DRAM {}{dram}", pct(row.dram_active_pct)));
            if !row.compute_pipe.is_empty() {
                let rate = row
                    .compute_gflops
                    .map_or_else(String::new, |g| format!(" {}", gflops_text(g)));
                let busiest = [
                    row.tensor_f16_pct.or(row.tensor_active_pct),
                    row.tensor_int_pct,
                    row.tensor_f64_pct,
                    row.fp64_active_pct,
                    row.fp32_active_pct,
                    row.fp16_active_pct,
                ]
                .into_iter()
                .flatten()
                .reduce(f64::max);
                parts.push(format!("{} {}{rate}", row.compute_pipe, pct(busiest)));
            }
        }
        "nvml-utilisation" => {
            parts.push(format!("util {}", pct(row.gpu_util_pct)));
            parts.push(format!("mem ctl {}", pct(row.memory_util_pct)));
        }
        _ => {
            if let Some(c) = row.cpu_busy_cores {
                parts.push(format!("CPU {c:.2} cores"));
            }
        }
    }
    match (row.power_w, row.power_limit_w) {
        (Some(w), Some(limit)) => parts.push(format!("{w:.0}/{limit:.0} W")),
        (Some(w), None) => parts.push(format!("{w:.0} W")),
        _ => {}
    }
    if let Some(c) = row.temperature_c {
        parts.push(format!("{c:.0} °C"));
    }
    if !row.throttle.is_empty() {
        parts.push(format!("throttle {}", row.throttle));
    }
    format!("{}  → {}", parts.join("  "), row.verdict)
}

fn ceiling_line(name: &str, c: &Ceiling, text: fn(f64) -> String) -> Option<String> {
    let measured = c
        .measured
        .map(|v| format!("{} measured ({})", text(v), c.measured_by));
    let spec = c
        .spec
        .map(|v| format!("spec {} ({})", text(v), c.spec_basis));
    match (measured, spec) {
        (None, None) => None,
        (Some(m), Some(s)) => Some(format!("{name}: {m}; {s}")),
        (Some(m), None) => Some(format!("{name}: {m}; no spec figure")),
        (None, Some(s)) => Some(format!("{name}: no run measured it; {s}")),
    }
}

/// The ceilings a device's figures stand against, one line each (only those its signal uses).
fn ceilings_lines(s: &DeviceSummary, rows: &[&TimelineRow]) -> Vec<String> {
    let mut out = Vec::new();
    if s.signal.sees_the_roofline() || s.device_id == "host" {
        out.extend(ceiling_line("DRAM", &s.ceilings.dram_gbps, gbps_text));
    }
    for p in &s.ceilings.pipes {
        if rows.iter().any(|r| r.compute_pipe == p.label) {
            out.extend(ceiling_line(&p.label, &p.ceiling, gflops_text));
        }
    }
    match &s.ceilings.capacity {
        Some(c) => out.push(format!(
            "capacity: {} usable ({})",
            bytes(c.usable_bytes),
            c.basis
        )),
        None => out.push(
            "capacity: the device's total (no run of this device measured its usable capacity)"
                .to_string(),
        ),
    }
    out
}

fn verdict_word(v: Verdict) -> String {
    format!("{} ({})", v.as_str(), v.meaning())
}

/// The summary of one device, as text.
pub fn summary_text(s: &DeviceSummary, rows: &[&TimelineRow]) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{} — {}: {} samples from {:.1} s to {:.1} s\n",
        s.device_id, s.device_name, s.samples, s.from_s, s.to_s
    ));
    out.push_str(&format!("  signal: {}\n", s.signal.as_str()));
    for why in &s.signal_why {
        out.push_str(&format!("    {why}\n"));
    }
    out.push_str("  ceilings:\n");
    for line in ceilings_lines(s, rows) {
        out.push_str(&format!("    {line}\n"));
    }
    for unseen in &s.unseen {
        out.push_str(&format!("  cannot see: {unseen}\n"));
    }
    for (i, p) in s.phases.iter().enumerate() {
        out.push_str(&format!(
            "  phase {}  {:.1}–{:.1} s  {} samples  {}\n      {}\n",
            i + 1,
            p.from_s,
            p.to_s,
            p.samples,
            verdict_word(p.verdict),
            p.figure
        ));
    }
    match s.verdict {
        Some(v) => {
            let shares: Vec<String> = s
                .shares
                .iter()
                .map(|(v, f)| format!("{} {:.0}%", v.as_str(), 100.0 * f))
                .collect();
            out.push_str(&format!(
                "  verdict: {} — time: {}\n      {}\n",
                verdict_word(v),
                shares.join(", "),
                s.figure
            ));
            for r in &s.remedies {
                out.push_str(&format!("      - {r}\n"));
            }
        }
        None => out.push_str("  verdict: none (no sample)\n"),
    }
    if let Some(secs) = s.full_in_s.filter(|t| t.is_finite()) {
        out.push_str(&format!(
            "  memory still growing at the end: full in about {} at that rate\n",
            crate::units::human(secs)
        ));
    }
    out
}

/// The JSON document of a watch.
#[derive(Serialize)]
pub struct WatchJson<'a> {
    pub schema: &'static str,
    pub watch_id: &'a str,
    /// The timeline CSV, where it was written.
    pub timeline: Option<String>,
    /// Why the watch ended: `duration`, `interrupted`, `job ended (exit 0)`, `device lost: …`.
    pub ended: String,
    pub notes: &'a [String],
    pub devices: &'a [DeviceSummary],
}

pub fn to_json(doc: &WatchJson) -> String {
    let mut s = serde_json::to_string_pretty(doc).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_line_names_the_figures_and_the_verdict() {
        let row = TimelineRow {
            t_s: 2.5,
            device_id: "cuda:0".into(),
            signal: "gpm".into(),
            memory_used_bytes: Some(40 << 30),
            memory_usable_bytes: Some(79 << 30),
            sm_active_pct: Some(95.0),
            dram_active_pct: Some(80.0),
            dram_gbps: Some(2680.0),
            tensor_f16_pct: Some(5.0),
            compute_pipe: "tensor bf16.f32".into(),
            compute_gflops: Some(30_000.0),
            verdict: "bandwidth".into(),
            ..TimelineRow::default()
        };
        let line = live_line(&row);
        assert!(line.contains("DRAM 80% 2.68 TB/s"), "{line}");
        assert!(line.contains("tensor bf16.f32 5% 30.0 TFLOP/s"), "{line}");
        assert!(line.ends_with("→ bandwidth"), "{line}");
    }
}
