//! The table `estimate` prints: a row per figure, a column per device, then each device over
//! the first; the sources of every device's figures and the notes on its bounds after it.
//! Pure: an [`estimate::Report`] in, text out.

use crate::analysis::estimate::{self, Answer, Bound, Machine, Mode, Phase, Report, Sourced};
use crate::text::letter;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// GiB with two decimals.
pub fn gib(v: f64) -> String {
    format!("{:.2}", v / GIB)
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "unknown".to_string(), f)
}

fn ms(v: Option<f64>) -> String {
    opt(v, |s| format!("{:.3}", s * 1e3))
}

fn phase_rows(rows: &mut Vec<Row>, name: &str, p: &[&Phase]) {
    rows.push(Row::new(
        &format!("{name} time (ms)"),
        p.iter().map(|x| x.time_s).collect(),
        ms,
    ));
    rows.push(Row::text(
        &format!("{name} bound"),
        p.iter().map(|x| x.bound.as_str().to_string()).collect(),
    ));
    rows.push(Row::new(
        &format!("{name}: bytes / bandwidth (ms)"),
        p.iter().map(|x| x.memory_s).collect(),
        ms,
    ));
    rows.push(Row::new(
        &format!("{name}: flops / compute (ms)"),
        p.iter().map(|x| x.compute_s).collect(),
        ms,
    ));
}

/// One table row: a figure per device (kept for the ratios) and its text.
struct Row {
    label: String,
    values: Vec<Option<f64>>,
    cells: Vec<String>,
}

impl Row {
    fn new(label: &str, values: Vec<Option<f64>>, f: impl Fn(Option<f64>) -> String) -> Row {
        Row {
            label: label.into(),
            cells: values.iter().map(|v| f(*v)).collect(),
            values,
        }
    }

    fn text(label: &str, cells: Vec<String>) -> Row {
        Row {
            label: label.into(),
            values: vec![None; cells.len()],
            cells,
        }
    }
}

/// The row of the largest batch that fits, per device (`unknown` where the capacity is).
fn largest_batch(batches: impl Iterator<Item = Option<u64>>) -> Row {
    Row::text(
        "largest batch that fits",
        batches
            .map(|b| b.map_or_else(|| "unknown".into(), |b| b.to_string()))
            .collect(),
    )
}

/// The table of a report, with the sources and notes after it.
pub fn table(r: &Report) -> String {
    let machines: Vec<&Machine> = r.devices.iter().map(|d| &d.machine).collect();
    let mut rows = machine_rows(r, &machines);
    let inference: Vec<&estimate::Inference> = r
        .devices
        .iter()
        .filter_map(|d| match &d.answer {
            Answer::Inference(i) => Some(i),
            Answer::Training(_) => None,
        })
        .collect();
    let training: Vec<&estimate::Training> = r
        .devices
        .iter()
        .filter_map(|d| match &d.answer {
            Answer::Training(t) => Some(t),
            Answer::Inference(_) => None,
        })
        .collect();
    if !inference.is_empty() {
        inference_rows(&mut rows, &inference);
    }
    if !training.is_empty() {
        training_rows(&mut rows, &training);
    }
    let letters: Vec<String> = (0..machines.len()).map(letter).collect();
    let mut out = heading(r);
    out.push_str(&grid(&rows, &letters));
    out.push_str(&notes(r, &letters));
    out
}

/// What the report is about: the workload, the model and its dtypes, the model's source.
fn heading(r: &Report) -> String {
    let (what, dtypes) = match r.mode {
        Mode::Inference => {
            let (s, d) = (
                r.inference.expect("inference shape"),
                r.dtypes.expect("dtypes"),
            );
            (
                format!(
                    "inference, batch {}, prompt {}, generate {}",
                    s.batch, s.prompt, s.generate
                ),
                format!(
                    "weights {}, activations {}, KV {}",
                    d.weights.as_str(),
                    d.activations.as_str(),
                    d.kv_cache.as_str()
                ),
            )
        }
        Mode::Training => {
            let s = r.training.expect("training shape");
            (
                format!(
                    "training, batch {}, sequence {}, {:?}, {}{}",
                    s.batch,
                    s.seq,
                    s.optimizer,
                    if s.mixed_precision {
                        "mixed precision"
                    } else {
                        "fp32"
                    },
                    if s.checkpointing {
                        ", checkpointing"
                    } else {
                        ""
                    }
                ),
                format!("compute {}", r.compute_dtype.as_str()),
            )
        }
    };
    let window = match r.model.sliding_window {
        Some(w) if r.model.window_layers > 0 => {
            format!(", {} with a {w}-token window", r.model.window_layers)
        }
        _ => String::new(),
    };
    format!(
        "{what} on {} ({:.2} B parameters, {} layers{window}; {dtypes}): {}\n",
        r.model.name,
        r.params / 1e9,
        r.model.layers,
        r.model.source,
    )
}

/// The rows every report has: each device's memory, bandwidth and compute.
fn machine_rows(r: &Report, m: &[&Machine]) -> Vec<Row> {
    vec![
        Row::new(
            "memory (GiB)",
            m.iter()
                .map(|x| x.memory_bytes.as_ref().map(|s| s.value))
                .collect(),
            |v| opt(v, gib),
        ),
        Row::new(
            "DRAM bandwidth (GB/s)",
            m.iter()
                .map(|x| x.bandwidth_bps.as_ref().map(|s| s.value))
                .collect(),
            |v| opt(v, |b| format!("{:.1}", b / 1e9)),
        ),
        Row::new(
            &format!("{} compute (TFLOP/s)", r.compute_dtype.as_str()),
            m.iter()
                .map(|x| x.compute_flops.as_ref().map(|s| s.value))
                .collect(),
            |v| opt(v, |c| format!("{:.2}", c / 1e12)),
        ),
    ]
}

/// Whether the workload fits, as a cell.
fn fits(f: Option<bool>) -> String {
    match f {
        Some(true) => "yes".to_string(),
        Some(false) => "NO".to_string(),
        None => "unknown (no capacity: --memory-gib)".to_string(),
    }
}

/// The rows of inference: memory, prefill, decode, the batch that fits and the bound.
fn inference_rows(rows: &mut Vec<Row>, i: &[&estimate::Inference]) {
    rows.push(Row::new(
        "weights (GiB)",
        i.iter().map(|x| Some(x.memory.weights_bytes)).collect(),
        |v| opt(v, gib),
    ));
    rows.push(Row::new(
        "KV cache (GiB)",
        i.iter().map(|x| Some(x.memory.kv_cache_bytes)).collect(),
        |v| opt(v, gib),
    ));
    rows.push(Row::new(
        "workspace (GiB)",
        i.iter().map(|x| Some(x.memory.workspace_bytes)).collect(),
        |v| opt(v, gib),
    ));
    rows.push(Row::new(
        "total (GiB)",
        i.iter().map(|x| Some(x.memory.total_bytes)).collect(),
        |v| opt(v, gib),
    ));
    rows.push(Row::text(
        "fits",
        i.iter().map(|x| fits(x.memory.fits)).collect(),
    ));
    rows.push(Row::new(
        "prefill compute (TFLOP/s)",
        i.iter()
            .map(|x| x.prefill_compute_flops.as_ref().map(|s| s.value))
            .collect(),
        |v| opt(v, |c| format!("{:.2}", c / 1e12)),
    ));
    phase_rows(
        rows,
        "prefill",
        &i.iter().map(|x| &x.prefill).collect::<Vec<_>>(),
    );
    rows.push(Row::new(
        "decode bandwidth (GB/s)",
        i.iter()
            .map(|x| x.decode_bandwidth_bps.as_ref().map(|s| s.value))
            .collect(),
        |v| opt(v, |b| format!("{:.1}", b / 1e9)),
    ));
    phase_rows(
        rows,
        "decode step",
        &i.iter().map(|x| &x.decode_step).collect::<Vec<_>>(),
    );
    rows.push(Row::new(
        "decode tokens/s",
        i.iter().map(|x| x.decode_tokens_per_s).collect(),
        |v| opt(v, |t| format!("{t:.1}")),
    ));
    rows.push(Row::new(
        "total time (s)",
        i.iter().map(|x| x.total_s).collect(),
        |v| opt(v, |t| format!("{t:.3}")),
    ));
    rows.push(largest_batch(i.iter().map(|x| x.max_batch)));
    rows.push(Row::text(
        "decode compute-bound from batch",
        i.iter()
            .map(|x| match (x.compute_bound_batch, x.never_compute_bound()) {
                (Some(b), _) => b.to_string(),
                (None, Some(_)) => "never".to_string(),
                (None, None) => "unknown".to_string(),
            })
            .collect(),
    ));
    rows.push(Row::text(
        "bound",
        i.iter().map(|x| x.bound.as_str().to_string()).collect(),
    ));
}

/// The rows of training: the states' and activations' memory, the step and the bound.
fn training_rows(rows: &mut Vec<Row>, t: &[&estimate::Training]) {
    rows.push(Row::text(
        "bytes per parameter",
        t.iter().map(|x| format!("{}", x.bytes_per_param)).collect(),
    ));
    rows.push(Row::new(
        "weights+grads+optimizer (GiB)",
        t.iter().map(|x| Some(x.states_bytes)).collect(),
        |v| opt(v, gib),
    ));
    rows.push(Row::new(
        "activations (GiB)",
        t.iter().map(|x| Some(x.activations_bytes)).collect(),
        |v| opt(v, gib),
    ));
    rows.push(Row::new(
        "total (GiB)",
        t.iter().map(|x| Some(x.total_bytes)).collect(),
        |v| opt(v, gib),
    ));
    rows.push(Row::text("fits", t.iter().map(|x| fits(x.fits)).collect()));
    rows.push(largest_batch(t.iter().map(|x| x.max_batch)));
    phase_rows(rows, "step", &t.iter().map(|x| &x.step).collect::<Vec<_>>());
    rows.push(Row::new(
        "tokens/s",
        t.iter().map(|x| x.tokens_per_s).collect(),
        |v| opt(v, |s| format!("{s:.1}")),
    ));
    rows.push(Row::text(
        "bound",
        t.iter().map(|x| x.bound.as_str().to_string()).collect(),
    ));
}

/// The rows as aligned columns: the figure, each device, then each device over the first.
fn grid(rows: &[Row], letters: &[String]) -> String {
    let mut header = vec!["".to_string()];
    header.extend(letters.iter().cloned());
    for l in letters.iter().skip(1) {
        header.push(format!("{l}/A"));
    }
    let mut grid = vec![header];
    for row in rows {
        let mut line = vec![row.label.clone()];
        line.extend(row.cells.iter().cloned());
        for v in row.values.iter().skip(1) {
            line.push(match (row.values[0], v) {
                (Some(a), Some(b)) if a > 0.0 => format!("{:.3}", b / a),
                _ => String::new(),
            });
        }
        grid.push(line);
    }
    let widths: Vec<usize> = (0..grid[0].len())
        .map(|c| grid.iter().map(|l| l[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for line in &grid {
        let cells: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(c, s)| {
                if c == 0 {
                    format!("{s:<w$}", w = widths[c])
                } else {
                    format!("{s:>w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push('\n');
    out
}

/// After the table: each device's name, basis and the source of each figure, and the notes on
/// its bounds.
fn notes(r: &Report, letters: &[String]) -> String {
    let mut out = String::new();
    for (l, d) in letters.iter().zip(&r.devices) {
        let x = &d.machine;
        let src = |s: &Option<Sourced>| {
            s.as_ref()
                .map_or_else(|| "none".to_string(), |s| s.source.clone())
        };
        out.push_str(&format!(
            "{l}: {} — {}; memory: {}; bandwidth: {}; compute: {}{}{}\n",
            x.name,
            x.basis,
            src(&x.memory_bytes),
            src(&x.bandwidth_bps),
            src(&x.compute_flops),
            if x.gemm.is_empty() {
                String::new()
            } else {
                format!("; prefill at the measured GEMM {}", x.gemm_source)
            },
            match &d.answer {
                Answer::Inference(i) if !x.gemv.is_empty() => {
                    format!("; decode at {}", src(&i.decode_bandwidth_bps))
                }
                _ => String::new(),
            }
        ));
    }
    for (l, d) in letters.iter().zip(&r.devices) {
        if let Answer::Inference(i) = &d.answer {
            if let Some((limit, ridge)) = i.never_compute_bound() {
                out.push_str(&format!(
                    "{l}: decode never turns compute-bound: as the batch grows a step tends to \
                     one sequence's arithmetic over its own bytes (its KV cache and embedding \
                     row), {limit:.1} FLOP/byte, \
                     under the ridge's {ridge:.1} (compute over the decode bandwidth)\n"
                ));
            }
            if let (Some(turn), Some(fit)) = (i.compute_bound_batch, i.max_batch) {
                if turn > fit {
                    out.push_str(&format!(
                        "{l}: decode turns compute-bound at batch {turn}, but at most {fit} \
                         sequences of this length fit in memory: capacity runs out first\n"
                    ));
                }
            }
        }
    }
    if r.devices.iter().any(|d| match &d.answer {
        Answer::Inference(i) => i.bound == Bound::Capacity,
        Answer::Training(t) => t.bound == Bound::Capacity,
    }) {
        out.push_str("capacity-bound: the workload does not fit in that device's memory\n");
    }
    out
}
