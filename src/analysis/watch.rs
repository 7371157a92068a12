//! What a watched job's counters mean on the roofline: each reading turned into the roofline's
//! units against the device's ceilings ([`place`]), a verdict per sample, the watch split into
//! phases where the job changes (the change-point code of [`crate::stats::changepoint`]), and
//! a verdict per phase and for the whole window, each with the figure behind it and the
//! remedies that fit ([`summarise`]).
//!
//! # The units
//!
//! - **Achieved DRAM bandwidth** = DRAM activity × the DRAM peak that activity is a share of.
//!   NVML's GPM defines `DRAM_BW_UTIL` as the bandwidth used against the theoretical maximum,
//!   and DCGM's "DRAM active" is the share of cycles the memory interface moved data, so the
//!   peak is the spec figure (the sheet's, else bus width × memory clock); where the device has
//!   no spec figure, the measured ceiling stands in, and the basis says so. The figure is then
//!   placed under the measured ceiling (the spec's where no run measured one): a triad that
//!   reaches what roofprobe measured reads 100 % of the measured ceiling, not 90 % of a sheet.
//! - **Achieved arithmetic rate** = the busiest pipe's activity (share of time) × that
//!   precision's measured peak, or its spec figure where no run measured it (said plainly). A
//!   pipe busy all the time runs at the rate our own kernels reached on it.
//! - **Intensity** = rate / bandwidth, the sample's place on the roofline's x axis.
//!
//! # The verdicts
//!
//! Per sample, from the source's own percentages (so a verdict does not hang on a ceiling):
//! **capacity** when the memory in use reaches [`FULL`] of the usable capacity; else
//! **bandwidth** or **compute** when DRAM or the busiest pipe is at [`NEAR`] or more (the higher
//! one wins); else **idle** when the SMs are active less than [`NEAR`] of the time (gaps
//! between bursts: the input pipeline, the launch rate or the host); else **latency** (the SMs
//! busy, neither ceiling near: small kernels, low occupancy, dependent work). With NVML's
//! utilisation alone the verdicts are coarse: **idle** below [`NEAR`] of the time, **bandwidth**
//! where the memory controller is busy [`NEAR`] of it, else **busy** (bandwidth and compute
//! cannot be told apart); on the host from `/proc`: **capacity**, **busy** or **idle**.
//!
//! Phases: each activity series is split into constant pieces by optimal partitioning
//! ([`changepoint::segments`], penalty `4 σ² ln n`, σ at least [`NOISE_FLOOR_PCT`] points);
//! the pieces of all series are intersected, a piece shorter than [`MIN_PHASE_SAMPLES`] joins
//! the neighbour closest to it, and neighbours with one verdict merge. A phase's verdict is
//! that of its median levels, and capacity wherever its memory reached [`FULL`].
//!
//! Pure: rows in, verdicts out. It must not read devices, files or clocks.

use crate::analysis::calibration::Calibration;
use crate::backend::watch::{Reading, Signal, WatchedDevice};
use crate::cases::{Family, Precision};
use crate::device::DeviceInfo;
use crate::results::timeline::{TimelineRow, SCHEMA};
use crate::specs::{basis_for, spec_figure, DeviceAttributes};
use crate::stats::changepoint;
use crate::units::bytes;
use crate::{Error, Result};
use serde::Serialize;

/// Memory in use at this share of the usable capacity is full: the next allocation of any size
/// may fail.
pub const FULL: f64 = 0.95;

/// Memory past this share of the usable capacity, and growing, is an out-of-memory risk.
pub const RISK: f64 = 0.8;

/// How soon memory growing past [`RISK`] must reach [`FULL`] to count as running full, seconds
/// (at least five samples).
pub const HORIZON_SECS: f64 = 2.0;

/// An activity at or above this share (percent) puts its ceiling near.
pub const NEAR: f64 = 50.0;

/// The least noise a series' change points assume, percentage points: the sources report
/// whole or tenth percents, and a job's own jitter is a few points.
pub const NOISE_FLOOR_PCT: f64 = 2.0;

/// The fewest samples a phase has (a shorter piece joins a neighbour).
pub const MIN_PHASE_SAMPLES: usize = 3;

/// The most points the change-point search sees per series (optimal partitioning is quadratic):
/// a longer watch is averaged in blocks first.
pub const MAX_SEGMENT_POINTS: usize = 1500;

/// What limits a job, in a sample or a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Memory near full: out of memory is one allocation away.
    Capacity,
    /// DRAM near its ceiling, the pipes not.
    Bandwidth,
    /// A tensor or FP pipe busy most of the time.
    Compute,
    /// The SMs idle much of the time: gaps between bursts.
    Idle,
    /// The SMs busy, but neither DRAM nor any pipe near its ceiling.
    Latency,
    /// Busy, but the signal cannot say on what (NVML utilisation, or the host's CPU time).
    Busy,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Capacity => "capacity",
            Verdict::Bandwidth => "bandwidth",
            Verdict::Compute => "compute",
            Verdict::Idle => "idle",
            Verdict::Latency => "latency",
            Verdict::Busy => "busy",
        }
    }

    /// What the verdict says, in a few words.
    pub fn meaning(self) -> &'static str {
        match self {
            Verdict::Capacity => "memory-capacity bound: memory near full",
            Verdict::Bandwidth => "bandwidth bound: DRAM near its ceiling",
            Verdict::Compute => "compute bound: the pipes busy",
            Verdict::Idle => "idle gaps: the device waits",
            Verdict::Latency => "neither ceiling near: latency or small kernels",
            Verdict::Busy => "busy: the signal cannot say on what",
        }
    }

    /// The remedies that fit (the seed's where they apply), most likely first.
    pub fn remedies(self) -> &'static [&'static str] {
        match self {
            Verdict::Capacity => &[
                "activation checkpointing (recompute activations in the backward pass instead \
                 of keeping them)",
                "mixed precision or quantisation: 16-bit or 8-bit weights and activations, an \
                 8-bit KV cache",
                "a smaller batch with gradient accumulation, or sharding (FSDP, ZeRO) across \
                 devices",
                "where used memory sits near full but the job holds less: the allocator's cache \
                 and fragmentation (PyTorch: expandable_segments)",
            ],
            Verdict::Bandwidth => &[
                "a larger batch, or continuous batching for a bandwidth-bound decode: each \
                 byte of weights read serves more tokens",
                "quantised weights or KV cache: fewer bytes per step",
                "fused kernels: one pass over memory instead of several",
            ],
            Verdict::Compute => &[
                "mixed precision: bf16 or fp8 tensor cores instead of f32 or tf32",
                "this is where a job should be: more speed needs less arithmetic (a smaller \
                 model, sparsity) or a faster device",
            ],
            Verdict::Idle => &[
                "a faster data loader: more workers, pinned memory, prefetching",
                "fewer, larger launches (CUDA graphs, fused kernels) where the launch rate \
                 limits",
                "overlap host work and transfers with the device's work",
            ],
            Verdict::Latency => &[
                "larger batches or fused kernels: small kernels keep the SMs busy without \
                 reaching either ceiling",
                "check occupancy and dependent chains in the busiest kernels (Nsight Compute)",
            ],
            Verdict::Busy => &[
                "the signal cannot tell bandwidth from compute: NVML's GPM metrics (Hopper and \
                 later) or a DCGM host engine (dcgmi) can",
            ],
        }
    }
}

/// A pipe whose activity a source reports, and the ceilings it runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pipe {
    /// HMMA: f16, bf16, tf32 and fp8 tensor work (GPM); any tensor work (DCGM), taken at the
    /// same peak.
    TensorF16,
    TensorInt,
    TensorF64,
    Fp64,
    Fp32,
    Fp16,
}

impl Pipe {
    pub const ALL: [Pipe; 6] = [
        Pipe::TensorF16,
        Pipe::TensorInt,
        Pipe::TensorF64,
        Pipe::Fp64,
        Pipe::Fp32,
        Pipe::Fp16,
    ];

    /// The ceilings (family and precision) this pipe's rate is taken at, the first one known.
    fn ceilings(self) -> &'static [(Family, Precision)] {
        use Precision as P;
        match self {
            Pipe::TensorF16 => &[
                (Family::Tensor, P::Bf16F32),
                (Family::Tensor, P::F16F32),
                (Family::Tensor, P::F16F16),
            ],
            Pipe::TensorInt => &[(Family::Tensor, P::S8S32)],
            Pipe::TensorF64 => &[(Family::Tensor, P::F64F64)],
            Pipe::Fp64 => &[(Family::Peak, P::F64)],
            Pipe::Fp32 => &[(Family::Peak, P::F32)],
            Pipe::Fp16 => &[(Family::Peak, P::F16x2)],
        }
    }

    /// Its activity in a reading, %; the half-precision tensor pipe falls back on "any tensor"
    /// (DCGM's only tensor field).
    fn pct(self, r: &Reading) -> Option<f64> {
        match self {
            Pipe::TensorF16 => r.tensor_f16_pct.or(r.tensor_active_pct),
            Pipe::TensorInt => r.tensor_int_pct,
            Pipe::TensorF64 => r.tensor_f64_pct,
            Pipe::Fp64 => r.fp64_active_pct,
            Pipe::Fp32 => r.fp32_active_pct,
            Pipe::Fp16 => r.fp16_active_pct,
        }
    }
}

/// A ceiling: what a run measured, and the spec's figure, each with where it came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Ceiling {
    pub measured: Option<f64>,
    /// The case and run that set it (`stream/triad/f32 in run box-…`).
    pub measured_by: String,
    pub spec: Option<f64>,
    /// `sheet: mem_bandwidth_gbs`, `theoretical: …`, or why there is none.
    pub spec_basis: String,
}

impl Ceiling {
    /// The roof a figure is placed under: the measured one, else the spec's; and which.
    pub fn roof(&self) -> Option<(f64, &'static str)> {
        self.measured
            .map(|v| (v, "measured"))
            .or(self.spec.map(|v| (v, "spec")))
    }
}

/// A compute ceiling of one pipe, as shown: the precision it is taken at.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PipeCeiling {
    pub pipe: Pipe,
    /// `tensor bf16.f32`, `f32`: the ceiling's name, as the run's tables name it.
    pub label: String,
    pub precision: Precision,
    pub ceiling: Ceiling,
}

/// The memory a device can use, and where that figure came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Capacity {
    pub usable_bytes: u64,
    pub basis: String,
}

/// Everything a watched device's readings are held against.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ceilings {
    pub dram_gbps: Ceiling,
    pub pipes: Vec<PipeCeiling>,
    /// Measured by a run (`capacity` rows); `None`: the device's total stands in.
    pub capacity: Option<Capacity>,
    /// Where the measured figures came from (run ids), and the spec's basis, one line each.
    pub sources: Vec<String>,
}

fn normalised(name: &str) -> String {
    name.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Refuses calibrations of another device model than `info` (their ceilings are not this
/// device's), unless `force`; then each mismatch is returned as a note.
pub fn check_models(info: &DeviceInfo, cals: &[Calibration], force: bool) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    for cal in cals {
        if normalised(&cal.device.name) == normalised(&info.name) {
            continue;
        }
        let what = format!(
            "the calibration of run {} is of {} ({}), but {} is {}",
            cal.run.run_id, cal.device.name, cal.device.id, info.id, info.name
        );
        if !force {
            return Err(Error::Usage(format!(
                "{what}: its ceilings are not this device's; measure this one with `roofprobe \
                 run`, or pass --force to use them anyway"
            )));
        }
        notes.push(format!(
            "{what}; its ceilings are used all the same (--force)"
        ));
    }
    Ok(notes)
}

impl Ceilings {
    /// The ceilings of `info`: the highest measured figure among `cals` (runs of this device
    /// model, [`check_models`]) and the spec's for its name or attributes.
    pub fn new(info: &DeviceInfo, cals: &[Calibration]) -> Ceilings {
        let attributes = DeviceAttributes::from_info(info);
        let (basis, sheet) = basis_for(&attributes);
        let spec = |family, precision| -> (Option<f64>, String) {
            match spec_figure(&basis, sheet, &attributes, family, precision) {
                Ok(f) => (Some(f.value), f.basis),
                Err(why) => (None, why),
            }
        };
        let best = |get: &dyn Fn(&Calibration) -> Option<(f64, String)>| {
            cals.iter()
                .filter_map(|c| {
                    get(c).map(|(v, case)| (v, format!("{case} in run {}", c.run.run_id)))
                })
                .filter(|(v, _)| v.is_finite() && *v > 0.0)
                .max_by(|a, b| a.0.total_cmp(&b.0))
        };
        let dram_measured = best(&|c: &Calibration| {
            let m = c
                .memory_ceilings
                .iter()
                .find(|m| m.level == crate::analysis::roofline::MemoryLevel::Dram)?;
            Some((m.gbps?, m.case.clone().unwrap_or_default()))
        });
        let (dram_spec, dram_basis) = spec(Family::Stream, Precision::F32);
        let dram_gbps = Ceiling {
            measured: dram_measured.as_ref().map(|m| m.0),
            measured_by: dram_measured.map(|m| m.1).unwrap_or_default(),
            spec: dram_spec,
            spec_basis: dram_basis,
        };
        let pipes = Pipe::ALL
            .iter()
            .map(|&pipe| {
                // the first precision measured, else the first with a spec figure
                let keys = pipe.ceilings();
                let measured = keys.iter().find_map(|&(f, p)| {
                    best(&|c: &Calibration| {
                        let cc = c.compute(f, p)?;
                        Some((cc.gflops?, cc.case.clone().unwrap_or_default()))
                    })
                    .map(|m| (f, p, m))
                });
                let (family, precision) = measured
                    .as_ref()
                    .map(|(f, p, _)| (*f, *p))
                    .or_else(|| keys.iter().copied().find(|&(f, p)| spec(f, p).0.is_some()))
                    .unwrap_or(keys[0]);
                let (spec_value, spec_basis) = spec(family, precision);
                let label = match family {
                    Family::Tensor => format!("tensor {precision}"),
                    _ => precision.to_string(),
                };
                PipeCeiling {
                    pipe,
                    label,
                    precision,
                    ceiling: Ceiling {
                        measured: measured.as_ref().map(|m| m.2 .0),
                        measured_by: measured.map(|m| m.2 .1).unwrap_or_default(),
                        spec: spec_value,
                        spec_basis,
                    },
                }
            })
            .collect();
        let capacity = cals
            .iter()
            .filter_map(|c| {
                let cap = c.capacity?;
                // What the device held, every process counted, when the run's largest
                // allocation after its context succeeded: beyond it the run found no room.
                let usable = match cap.largest_allocation_bytes {
                    Some(largest) => cap
                        .total_bytes
                        .saturating_sub(cap.free_bytes.saturating_sub(largest)),
                    None => cap.total_bytes,
                };
                Some(Capacity {
                    usable_bytes: usable,
                    basis: format!(
                        "measured in run {}: {} of {} total, the largest allocation after its \
                         context",
                        c.run.run_id,
                        bytes(usable),
                        bytes(cap.total_bytes)
                    ),
                })
            })
            .max_by_key(|c| c.usable_bytes);
        let mut sources: Vec<String> = cals
            .iter()
            .map(|c| format!("measured: run {} ({})", c.run.run_id, c.device.name))
            .collect();
        if cals.is_empty() {
            sources.push(
                "measured: none (no --calibration or --run given): the figures are the spec's"
                    .to_string(),
            );
        }
        sources.push(format!("spec: {}", basis.describe()));
        Ceilings {
            dram_gbps,
            pipes,
            capacity,
            sources,
        }
    }

    fn pipe(&self, pipe: Pipe) -> Option<&PipeCeiling> {
        self.pipes.iter().find(|p| p.pipe == pipe)
    }
}

/// What a watch knows around each reading: the device, the ceilings, the watch's identity.
pub struct Context<'a> {
    pub device: &'a WatchedDevice,
    pub ceilings: &'a Ceilings,
    pub watch_id: &'a str,
    pub host: &'a str,
    pub pid: Option<u32>,
}

/// The roofline's units for one reading: the timeline row, with its verdict.
pub fn place(ctx: &Context, reading: &Reading, t_s: f64, timestamp_utc: String) -> TimelineRow {
    let info = &ctx.device.info;
    let total = reading
        .memory_total_bytes
        .or(Some(info.memory_total_bytes).filter(|&b| b > 0));
    let (usable, capacity_basis) = match (&ctx.ceilings.capacity, total) {
        (Some(c), _) => (Some(c.usable_bytes), "measured".to_string()),
        (None, Some(t)) => (
            Some(t),
            "total (no run measured the usable capacity)".to_string(),
        ),
        (None, None) => (None, String::new()),
    };
    let mut row = TimelineRow {
        schema: SCHEMA.to_string(),
        watch_id: ctx.watch_id.to_string(),
        timestamp_utc,
        host: ctx.host.to_string(),
        device_id: info.id.clone(),
        device_name: info.name.clone(),
        uuid: info.identity.uuid.clone(),
        signal: ctx.device.signal.as_str().to_string(),
        pid: ctx.pid,
        t_s,
        span_s: reading.span_secs,
        memory_used_bytes: reading.memory_used_bytes,
        memory_total_bytes: total,
        memory_usable_bytes: usable,
        capacity_basis,
        process_memory_bytes: reading.process_memory_bytes,
        sm_clock_mhz: reading.sm_clock_mhz,
        memory_clock_mhz: reading.memory_clock_mhz,
        power_w: reading.power_w,
        power_limit_w: ctx.device.power_limit_w,
        temperature_c: reading.temperature_c,
        throttle: reading.throttle.clone(),
        sm_active_pct: reading.sm_active_pct,
        sm_occupancy_pct: reading.sm_occupancy_pct,
        dram_active_pct: reading.dram_active_pct,
        tensor_active_pct: reading.tensor_active_pct,
        tensor_f16_pct: reading.tensor_f16_pct,
        tensor_int_pct: reading.tensor_int_pct,
        tensor_f64_pct: reading.tensor_f64_pct,
        fp64_active_pct: reading.fp64_active_pct,
        fp32_active_pct: reading.fp32_active_pct,
        fp16_active_pct: reading.fp16_active_pct,
        gpu_util_pct: reading.gpu_util_pct,
        memory_util_pct: reading.memory_util_pct,
        pcie_tx_bytes_per_s: reading.pcie_tx_bytes_per_s,
        pcie_rx_bytes_per_s: reading.pcie_rx_bytes_per_s,
        cpu_busy_cores: reading.cpu_busy_cores,
        ..TimelineRow::default()
    };
    let c = ctx.ceilings;
    if let Some((roof, which)) = c.dram_gbps.roof() {
        row.dram_ceiling_gbps = Some(roof);
        row.dram_basis = which.to_string();
        if let Some(pct) = reading.dram_active_pct {
            // the sources' DRAM activity is a share of the theoretical peak (module doc)
            let (base, how) = match c.dram_gbps.spec {
                Some(spec) => (spec, ""),
                None => (roof, "; activity taken against it (no spec figure)"),
            };
            row.dram_gbps = Some(pct / 100.0 * base);
            row.dram_basis.push_str(how);
        }
    }
    // the busiest pipe that did anything; the first of equals (tensor before FP)
    let busiest = Pipe::ALL
        .iter()
        .filter_map(|&p| Some((p, p.pct(reading)?)))
        .filter(|(_, pct)| *pct > 0.0)
        .fold(None, |best: Option<(Pipe, f64)>, (p, pct)| match best {
            Some((_, b)) if b >= pct => best,
            _ => Some((p, pct)),
        });
    if let Some((pipe, pct)) = busiest {
        if let Some(pc) = c.pipe(pipe) {
            row.compute_pipe = pc.label.clone();
            if let Some((roof, which)) = pc.ceiling.roof() {
                row.compute_ceiling_gflops = Some(roof);
                row.compute_gflops = Some(pct / 100.0 * roof);
                row.compute_basis = which.to_string();
            }
        }
    }
    row.flop_per_byte = row
        .compute_gflops
        .zip(row.dram_gbps)
        .filter(|(_, b)| *b > 0.0)
        .map(|(f, b)| f / b);
    row.verdict = classify(
        &levels_of(&row),
        ctx.device.signal,
        units_watched(info, ctx.pid),
    )
    .as_str()
    .to_string();
    row
}

/// The figures a verdict is made of, %: each `None` where the signal has no such figure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Levels {
    /// Memory in use over the usable capacity, 0–1.
    pub memory_fraction: Option<f64>,
    pub sm_pct: Option<f64>,
    pub dram_pct: Option<f64>,
    /// The busiest pipe's activity.
    pub pipe_pct: Option<f64>,
    pub gpu_util_pct: Option<f64>,
    pub memory_util_pct: Option<f64>,
    pub cpu_busy_cores: Option<f64>,
}

/// The busiest pipe's activity in a row, %.
fn pipe_pct(row: &TimelineRow) -> Option<f64> {
    [
        row.tensor_f16_pct.or(row.tensor_active_pct),
        row.tensor_int_pct,
        row.tensor_f64_pct,
        row.fp64_active_pct,
        row.fp32_active_pct,
        row.fp16_active_pct,
    ]
    .into_iter()
    .flatten()
    .reduce(f64::max)
}

pub fn levels_of(row: &TimelineRow) -> Levels {
    Levels {
        memory_fraction: row
            .memory_used_bytes
            .zip(row.memory_usable_bytes)
            .filter(|(_, u)| *u > 0)
            .map(|(m, u)| m as f64 / u as f64),
        sm_pct: row.sm_active_pct,
        dram_pct: row.dram_active_pct,
        pipe_pct: pipe_pct(row),
        gpu_util_pct: row.gpu_util_pct,
        memory_util_pct: row.memory_util_pct,
        cpu_busy_cores: row.cpu_busy_cores,
    }
}

/// The verdict of some levels under `signal` (the module's rules); `units` the CPUs watched
/// on the host ([`units_watched`]).
pub fn classify(l: &Levels, signal: Signal, units: u32) -> Verdict {
    if l.memory_fraction.is_some_and(|f| f >= FULL) {
        return Verdict::Capacity;
    }
    match signal {
        Signal::Gpm | Signal::Dcgm => {
            let dram = l.dram_pct.unwrap_or(0.0);
            let pipe = l.pipe_pct.unwrap_or(0.0);
            let sm = l.sm_pct.unwrap_or(dram.max(pipe));
            if dram.max(pipe) >= NEAR {
                if pipe >= dram {
                    Verdict::Compute
                } else {
                    Verdict::Bandwidth
                }
            } else if sm < NEAR {
                Verdict::Idle
            } else {
                Verdict::Latency
            }
        }
        Signal::Utilisation => match (l.gpu_util_pct, l.memory_util_pct) {
            (Some(g), _) if g < NEAR => Verdict::Idle,
            (_, Some(m)) if m >= NEAR => Verdict::Bandwidth,
            (None, None) => Verdict::Idle,
            _ => Verdict::Busy,
        },
        Signal::Proc => {
            // busy from half the CPUs watched on: half a CPU for a process (`units` 1), half
            // the machine's without one
            let busy = l.cpu_busy_cores.unwrap_or(0.0);
            if busy >= 0.5 * f64::from(units.max(1)) {
                Verdict::Busy
            } else {
                Verdict::Idle
            }
        }
    }
}

/// The CPUs a host watch's CPU time is held against: one for a process (busy from half a CPU
/// on), the machine's for the whole machine. (A GPU's verdicts do not use it.)
pub fn units_watched(info: &DeviceInfo, pid: Option<u32>) -> u32 {
    if pid.is_some() {
        1
    } else {
        info.units.max(1)
    }
}

fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The series a phase split looks at, for a signal: the activity percentages it has.
fn series(rows: &[TimelineRow], signal: Signal) -> Vec<Vec<f64>> {
    let take = |f: &dyn Fn(&TimelineRow) -> Option<f64>| -> Option<Vec<f64>> {
        let v: Vec<Option<f64>> = rows.iter().map(f).collect();
        v.iter()
            .any(Option::is_some)
            .then(|| v.iter().map(|x| x.unwrap_or(0.0)).collect())
    };
    type Getter = Box<dyn Fn(&TimelineRow) -> Option<f64>>;
    let getters: Vec<Getter> = match signal {
        Signal::Gpm | Signal::Dcgm => vec![
            Box::new(|r| r.dram_active_pct),
            Box::new(pipe_pct),
            Box::new(|r| r.sm_active_pct),
        ],
        Signal::Utilisation => vec![
            Box::new(|r| r.gpu_util_pct),
            Box::new(|r| r.memory_util_pct),
        ],
        Signal::Proc => vec![Box::new(|r| r.cpu_busy_cores.map(|c| 100.0 * c))],
    };
    getters.iter().filter_map(|g| take(g.as_ref())).collect()
}

/// Averages `y` in blocks of `block`.
fn blocks(y: &[f64], block: usize) -> Vec<f64> {
    y.chunks(block)
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect()
}

/// The pieces `[s, t)` of `n` samples where any of the series changes.
fn pieces(all: &[Vec<f64>], n: usize) -> Vec<(usize, usize)> {
    if n == 0 {
        return Vec::new();
    }
    let block = n.div_ceil(MAX_SEGMENT_POINTS).max(1);
    let mut cuts = std::collections::BTreeSet::new();
    for y in all {
        let y = blocks(y, block);
        let sigma = changepoint::noise(&y).max(NOISE_FLOOR_PCT);
        let penalty = changepoint::PENALTY * sigma * sigma * (y.len() as f64).ln().max(1.0);
        for (s, _) in changepoint::segments(&y, penalty) {
            cuts.insert((s * block).min(n));
        }
    }
    cuts.insert(0);
    let cuts: Vec<usize> = cuts.into_iter().filter(|&c| c < n).collect();
    cuts.iter()
        .enumerate()
        .map(|(i, &s)| (s, cuts.get(i + 1).copied().unwrap_or(n)))
        .collect()
}

/// One phase of a watch: its samples and what they say.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Phase {
    /// Its first and last sample (indices into the device's rows), and their times.
    pub first: usize,
    pub last: usize,
    pub from_s: f64,
    pub to_s: f64,
    pub samples: usize,
    pub verdict: Verdict,
    /// The medians of its samples.
    pub levels: Levels,
    pub dram_gbps: Option<f64>,
    pub compute_gflops: Option<f64>,
    pub compute_pipe: String,
    pub flop_per_byte: Option<f64>,
    /// The most memory in use, and how fast it grew up to there (least squares).
    pub memory_peak_bytes: Option<u64>,
    pub memory_growth_bytes_per_s: Option<f64>,
    /// Where memory fell to after its peak (within the phase, or at the sample after it), where
    /// it fell below half the peak: an allocation failed, or the job let go.
    pub memory_fell_to_bytes: Option<u64>,
    /// The figure behind the verdict, in a sentence.
    pub figure: String,
    pub remedies: Vec<String>,
}

fn median_levels(rows: &[TimelineRow]) -> Levels {
    let l: Vec<Levels> = rows.iter().map(levels_of).collect();
    let m = |f: fn(&Levels) -> Option<f64>| median(l.iter().filter_map(f));
    Levels {
        memory_fraction: m(|l| l.memory_fraction),
        sm_pct: m(|l| l.sm_pct),
        dram_pct: m(|l| l.dram_pct),
        pipe_pct: m(|l| l.pipe_pct),
        gpu_util_pct: m(|l| l.gpu_util_pct),
        memory_util_pct: m(|l| l.memory_util_pct),
        cpu_busy_cores: m(|l| l.cpu_busy_cores),
    }
}

/// Whether memory runs full in a stretch of rows: it reached [`FULL`] of the usable capacity,
/// or it is past [`RISK`] and growing fast enough to reach [`FULL`] within [`HORIZON_SECS`]
/// (five samples, where they are further apart) after the stretch's last sample. An allocation
/// that fails falls between two samples: the last one before it can be short of full. Public
/// for the tests, hidden from the docs.
#[doc(hidden)]
pub fn runs_full(rows: &[TimelineRow]) -> bool {
    let memory: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| Some((r.t_s, levels_of(r).memory_fraction?)))
        .collect();
    if memory.iter().any(|(_, f)| *f >= FULL) {
        return true;
    }
    let Some((peak, growth)) = growth_to_peak(&memory) else {
        return false;
    };
    let spans = median(rows.iter().map(|r| r.span_s)).unwrap_or(0.0);
    let horizon = HORIZON_SECS.max(5.0 * spans);
    match growth {
        Some(g) if g > 0.0 && memory[peak].1 >= RISK => (FULL - memory[peak].1) / g <= horizon,
        _ => false,
    }
}

/// Where memory peaked in `(t, memory)` points, and how fast it grew up to there (least squares
/// over the points up to the peak): a job that runs out of memory lets it all go at once, and
/// the samples after the fall are no part of its growth.
fn growth_to_peak(memory: &[(f64, f64)]) -> Option<(usize, Option<f64>)> {
    let peak = memory
        .iter()
        .enumerate()
        .max_by(|a, b| a.1 .1.total_cmp(&b.1 .1))?
        .0;
    Some((peak, slope(&memory[..=peak])))
}

/// The verdict of a stretch of rows: capacity where memory runs full in it ([`runs_full`]),
/// else that of its median levels.
fn verdict_of(rows: &[TimelineRow], signal: Signal, units: u32) -> Verdict {
    if runs_full(rows) {
        return Verdict::Capacity;
    }
    classify(&median_levels(rows), signal, units)
}

/// Squared distance between two stretches' median levels.
fn distance(a: &Levels, b: &Levels) -> f64 {
    let d = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => (x - y) * (x - y),
        _ => 0.0,
    };
    d(a.sm_pct, b.sm_pct)
        + d(a.dram_pct, b.dram_pct)
        + d(a.pipe_pct, b.pipe_pct)
        + d(a.gpu_util_pct, b.gpu_util_pct)
        + d(a.memory_util_pct, b.memory_util_pct)
        + d(
            a.cpu_busy_cores.map(|c| 100.0 * c),
            b.cpu_busy_cores.map(|c| 100.0 * c),
        )
}

/// The phases of one device's rows (the module's method).
pub fn phases(rows: &[TimelineRow], signal: Signal, units: u32) -> Vec<Phase> {
    let n = rows.len();
    let mut parts = pieces(&series(rows, signal), n);
    // Short pieces join the neighbour whose levels are closest, shortest first.
    while parts.len() > 1 {
        let Some((i, _)) = parts
            .iter()
            .enumerate()
            .filter(|(_, (s, t))| t - s < MIN_PHASE_SAMPLES)
            .min_by_key(|(_, (s, t))| t - s)
        else {
            break;
        };
        let here = median_levels(&rows[parts[i].0..parts[i].1]);
        let near = |j: usize| distance(&here, &median_levels(&rows[parts[j].0..parts[j].1]));
        let j = match (i.checked_sub(1), (i + 1 < parts.len()).then_some(i + 1)) {
            (Some(a), Some(b)) => {
                if near(a) <= near(b) {
                    a
                } else {
                    b
                }
            }
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        };
        let (lo, hi) = (i.min(j), i.max(j));
        parts[lo] = (parts[lo].0, parts[hi].1);
        parts.remove(hi);
    }
    // Neighbours with one verdict are one phase.
    let mut merged: Vec<((usize, usize), Verdict)> = Vec::new();
    for (s, t) in parts {
        let v = verdict_of(&rows[s..t], signal, units);
        match merged.last_mut() {
            Some(((_, end), last)) if *last == v => *end = t,
            _ => merged.push(((s, t), v)),
        }
    }
    merged
        .into_iter()
        .map(|((s, t), verdict)| phase_of(rows, s, t, verdict))
        .collect()
}

/// The least-squares slope of `y` against `x`.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

fn phase_of(rows: &[TimelineRow], s: usize, t: usize, verdict: Verdict) -> Phase {
    let part = &rows[s..t];
    let levels = median_levels(part);
    let memory: Vec<(f64, f64)> = part
        .iter()
        .filter_map(|r| Some((r.t_s, r.memory_used_bytes? as f64)))
        .collect();
    let (growth, fell_to) = match growth_to_peak(&memory) {
        Some((peak, growth)) => {
            // the least memory after the peak, in the phase or the sample after it
            let after = memory[peak + 1..]
                .iter()
                .map(|m| m.1)
                .chain(
                    rows.get(t)
                        .and_then(|r| r.memory_used_bytes)
                        .map(|b| b as f64),
                )
                .reduce(f64::min);
            let fell = after
                .filter(|a| *a < 0.5 * memory[peak].1)
                .map(|a| a as u64);
            (growth, fell)
        }
        None => (None, None),
    };
    let pipe = {
        let mut names: Vec<&str> = part
            .iter()
            .map(|r| r.compute_pipe.as_str())
            .filter(|p| !p.is_empty())
            .collect();
        names.sort_unstable();
        // the pipe most samples name
        let mut best = ("", 0);
        for g in names.chunk_by(|a, b| a == b) {
            if g.len() > best.1 {
                best = (g[0], g.len());
            }
        }
        best.0.to_string()
    };
    let mut p = Phase {
        first: s,
        last: t - 1,
        from_s: part[0].t_s,
        to_s: part[part.len() - 1].t_s,
        samples: part.len(),
        verdict,
        levels,
        dram_gbps: median(part.iter().filter_map(|r| r.dram_gbps)),
        compute_gflops: median(part.iter().filter_map(|r| r.compute_gflops)),
        compute_pipe: pipe,
        flop_per_byte: median(part.iter().filter_map(|r| r.flop_per_byte)),
        memory_peak_bytes: part.iter().filter_map(|r| r.memory_used_bytes).max(),
        memory_growth_bytes_per_s: growth,
        memory_fell_to_bytes: fell_to,
        figure: String::new(),
        remedies: verdict.remedies().iter().map(|s| s.to_string()).collect(),
    };
    p.figure = figure(&p, part);
    p
}

/// `3.35 TB/s`, `850 GB/s`, `0.12 GB/s`.
pub fn gbps_text(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2} TB/s", v / 1000.0)
    } else if v >= 10.0 {
        format!("{v:.0} GB/s")
    } else {
        format!("{v:.2} GB/s")
    }
}

/// `612 TFLOP/s`, `850 GFLOP/s`, `0.45 GFLOP/s`.
pub fn gflops_text(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.1} TFLOP/s", v / 1000.0)
    } else if v >= 10.0 {
        format!("{v:.0} GFLOP/s")
    } else {
        format!("{v:.2} GFLOP/s")
    }
}

fn pct_text(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.0} %"))
}

/// The figure behind a phase's verdict, in a sentence.
fn figure(p: &Phase, rows: &[TimelineRow]) -> String {
    let first = &rows[0];
    let l = &p.levels;
    let dram_roof = first.dram_ceiling_gbps;
    let dram = match (p.dram_gbps, dram_roof) {
        (Some(a), Some(roof)) => format!(
            "DRAM {} = {:.0} % of the {} {}",
            gbps_text(a),
            100.0 * a / roof,
            first.dram_basis.split(';').next().unwrap_or_default(),
            gbps_text(roof)
        ),
        _ => format!("DRAM active {}", pct_text(l.dram_pct)),
    };
    let pipe_name = if p.compute_pipe.is_empty() {
        "pipes".to_string()
    } else {
        format!("{} pipe", p.compute_pipe)
    };
    let compute = match (p.compute_gflops, first.compute_ceiling_gflops) {
        (Some(a), Some(roof)) => format!(
            "{pipe_name} busy {} = {} of the {} {}",
            pct_text(l.pipe_pct),
            gflops_text(a),
            first.compute_basis,
            gflops_text(roof)
        ),
        _ => format!("{pipe_name} busy {}", pct_text(l.pipe_pct)),
    };
    match p.verdict {
        Verdict::Capacity => {
            let usable = first.memory_usable_bytes;
            let peak = p.memory_peak_bytes;
            let mut s = match (peak, usable) {
                (Some(m), Some(u)) => format!(
                    "memory {} of the {} usable ({:.0} %, {})",
                    bytes(m),
                    bytes(u),
                    100.0 * m as f64 / u as f64,
                    first.capacity_basis
                ),
                _ => "memory near full".to_string(),
            };
            if let Some(g) = p.memory_growth_bytes_per_s.filter(|g| *g > 0.0) {
                s.push_str(&format!(", growing {}/s", bytes(g as u64)));
            }
            s.push_str(&format!(
                "; meanwhile {}",
                activity_figure(p, first, &dram, &compute)
            ));
            if let Some(after) = p.memory_fell_to_bytes {
                s.push_str(&format!(
                    "; then it fell to {}: out of memory, or the job ended",
                    bytes(after)
                ));
            }
            s
        }
        Verdict::Bandwidth if first.signal == Signal::Utilisation.as_str() => format!(
            "the memory controller busy {} of the time, a kernel running {} (NVML \
             utilisation, coarse)",
            pct_text(l.memory_util_pct),
            pct_text(l.gpu_util_pct)
        ),
        Verdict::Bandwidth => format!("{dram}; {compute}"),
        Verdict::Compute => format!("{compute}; {dram}"),
        Verdict::Idle | Verdict::Busy if first.signal == Signal::Proc.as_str() => format!(
            "{:.2} CPUs' worth busy{}",
            l.cpu_busy_cores.unwrap_or(0.0),
            match (p.memory_peak_bytes, first.memory_usable_bytes) {
                (Some(m), Some(u)) => format!(", memory {} of {}", bytes(m), bytes(u)),
                _ => String::new(),
            }
        ),
        Verdict::Idle | Verdict::Busy if first.signal == Signal::Utilisation.as_str() => format!(
            "a kernel running {} of the time, the memory controller busy {} (NVML \
             utilisation, coarse)",
            pct_text(l.gpu_util_pct),
            pct_text(l.memory_util_pct)
        ),
        Verdict::Idle | Verdict::Busy => {
            format!(
                "SMs active {} of the time; {dram}; {compute}",
                pct_text(l.sm_pct)
            )
        }
        Verdict::Latency => format!(
            "SMs active {} of the time, but {dram} and the {compute}: neither ceiling near",
            pct_text(l.sm_pct)
        ),
    }
}

/// What the device did meanwhile, for a capacity phase: its activity's own verdict's figure.
fn activity_figure(p: &Phase, first: &TimelineRow, dram: &str, compute: &str) -> String {
    let l = &p.levels;
    match first.signal.as_str() {
        "gpm" | "dcgm" => format!("SMs active {}, {dram}, {compute}", pct_text(l.sm_pct)),
        "nvml-utilisation" => format!(
            "a kernel running {} of the time, the memory controller busy {}",
            pct_text(l.gpu_util_pct),
            pct_text(l.memory_util_pct)
        ),
        _ => format!("{:.2} CPUs' worth busy", l.cpu_busy_cores.unwrap_or(0.0)),
    }
}

/// One device's watch, summed up.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceSummary {
    pub device_id: String,
    pub device_name: String,
    pub signal: Signal,
    pub signal_why: Vec<String>,
    pub unseen: Vec<String>,
    pub ceilings: Ceilings,
    pub samples: usize,
    pub from_s: f64,
    pub to_s: f64,
    /// The window's verdict: the one that held the most time (capacity wherever memory ran
    /// full), with each verdict's share of the time.
    pub verdict: Option<Verdict>,
    pub shares: Vec<(Verdict, f64)>,
    pub figure: String,
    pub remedies: Vec<String>,
    pub phases: Vec<Phase>,
    /// Memory growing at the end, and when it would reach the usable capacity at that rate.
    pub full_in_s: Option<f64>,
}

/// The summary of one device's rows (in time order).
pub fn summarise(
    device: &WatchedDevice,
    ceilings: &Ceilings,
    rows: &[TimelineRow],
) -> DeviceSummary {
    let signal = device.signal;
    let pid = rows.first().and_then(|r| r.pid);
    let phases = phases(rows, signal, units_watched(&device.info, pid));
    let span = |p: &Phase| -> f64 {
        rows[p.first..=p.last]
            .iter()
            .map(|r| r.span_s.max(0.0))
            .sum::<f64>()
    };
    let total: f64 = phases.iter().map(span).sum();
    let mut shares: Vec<(Verdict, f64)> = Vec::new();
    for p in &phases {
        let share = if total > 0.0 {
            span(p) / total
        } else {
            p.samples as f64 / rows.len().max(1) as f64
        };
        match shares.iter_mut().find(|(v, _)| *v == p.verdict) {
            Some((_, s)) => *s += share,
            None => shares.push((p.verdict, share)),
        }
    }
    shares.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let verdict = if phases.iter().any(|p| p.verdict == Verdict::Capacity) {
        Some(Verdict::Capacity)
    } else {
        shares.first().map(|s| s.0)
    };
    let main = verdict.and_then(|v| {
        phases
            .iter()
            .filter(|p| p.verdict == v)
            .max_by(|a, b| span(a).total_cmp(&span(b)))
    });
    let full_in_s = phases.last().and_then(|p| {
        let g = p.memory_growth_bytes_per_s.filter(|g| *g > 0.0)?;
        let last = rows.last()?;
        let left = last
            .memory_usable_bytes?
            .saturating_sub(last.memory_used_bytes?);
        Some(left as f64 / g)
    });
    DeviceSummary {
        device_id: device.info.id.clone(),
        device_name: device.info.name.clone(),
        signal,
        signal_why: device.signal_why.clone(),
        unseen: device.unseen.clone(),
        ceilings: ceilings.clone(),
        samples: rows.len(),
        from_s: rows.first().map_or(0.0, |r| r.t_s),
        to_s: rows.last().map_or(0.0, |r| r.t_s),
        verdict,
        shares,
        figure: main.map(|p| p.figure.clone()).unwrap_or_default(),
        remedies: verdict
            .map(|v| v.remedies().iter().map(|s| s.to_string()).collect())
            .unwrap_or_default(),
        phases,
        full_in_s,
    }
}
