//! The calibration of a run: [`Calibration`] (the file other estimators load, defined in the
//! lean `roofprobe-calibration` crate so they build nothing else) built from a run's CSV rows.
//!
//! One calibration describes one run of one device: identity, when it was measured, the clocks
//! seen, the fitted ceilings with their spec figures and efficiencies, the ridge points and the
//! classified points ([`crate::analysis::roofline`] explains the method). It is built from a run's CSV
//! rows ([`FromRecords::from_records`]) and nothing else, so `roofprobe export` on any machine
//! gives what the run itself wrote. The schema, its versioning and the checks a file passes when
//! it is read are the calibration crate's.
//!
//! This module must not measure, print or look at anything but its inputs.

pub use roofprobe_calibration::{check, Calibration, ClocksSeen, Device, RunInfo, SCHEMA};

use crate::analysis::roofline;
use crate::cases::{Family, Precision};
use crate::results::record::Record;
use crate::specs::{self, DeviceAttributes};
use crate::{Error, Result};
use std::collections::BTreeMap;

fn range(values: impl Iterator<Item = Option<f64>>) -> (Option<f64>, Option<f64>) {
    let v: Vec<f64> = values.flatten().filter(|v| v.is_finite()).collect();
    (
        v.iter().copied().reduce(f64::min),
        v.iter().copied().reduce(f64::max),
    )
}

/// Building a [`Calibration`] from a run's rows (`Calibration::from_records(&rows, None)` with
/// this trait in scope).
pub trait FromRecords: Sized {
    /// Builds the calibration of one run from its rows. `attributes` describe the device when
    /// the run itself is at hand (they add the bus width a theoretical DRAM figure needs); from
    /// a CSV alone, pass `None`. Every row must pass [`crate::results::check::check_row`] and belong to
    /// one run of one device.
    fn from_records(records: &[Record], attributes: Option<DeviceAttributes>) -> Result<Self>;
}

impl FromRecords for Calibration {
    fn from_records(
        records: &[Record],
        attributes: Option<DeviceAttributes>,
    ) -> Result<Calibration> {
        let first = records
            .first()
            .ok_or_else(|| Error::Usage("a calibration needs at least one measurement".into()))?;
        // Rows from a reader have passed these checks; rows built in memory must pass them too,
        // so no row marked invalid, no NaN and no mixed device reaches a calibration.
        crate::results::check::check_rows(records)
            .map_err(|e| Error::Internal(format!("these rows cannot be fitted: {e}")))?;
        let mut runs: Vec<&str> = records.iter().map(|r| r.run_id.as_str()).collect();
        runs.dedup();
        if runs.len() > 1 {
            runs.sort_unstable();
            runs.dedup();
            return Err(Error::Usage(format!(
                "the rows come from {} runs ({}); a calibration describes one",
                runs.len(),
                runs.join(", ")
            )));
        }
        let attributes = attributes.unwrap_or_else(|| device_attributes(records));
        let (basis, sheet) = specs::basis_for(&attributes);
        let spec = |family: Family, precision: Precision| {
            specs::spec_figure(&basis, sheet, &attributes, family, precision)
        };
        let fit = roofline::fit(records, &spec);

        let mut stamps: Vec<&str> = records.iter().map(|r| r.timestamp_utc.as_str()).collect();
        stamps.sort_unstable();
        let (clock_mhz_min, clock_mhz_max) = range(records.iter().map(|r| r.clock_mhz));
        let (memory_mhz_min, memory_mhz_max) = range(records.iter().map(|r| r.memory_clock_mhz));
        let mut throttle: Vec<String> = records
            .iter()
            .flat_map(|r| r.throttle.split(';'))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        throttle.sort();
        throttle.dedup();
        let calibration = Calibration {
            schema: SCHEMA.to_string(),
            generator: format!("roofprobe {}", env!("CARGO_PKG_VERSION")),
            units: roofprobe_calibration::units_table(),
            device: Device {
                name: first.device_name.clone(),
                backend: first.backend,
                id: first.device_id.clone(),
                compute_capability: first.compute_capability.clone(),
                compute_units: first.units,
                last_level_cache_bytes: first.llc_bytes,
                driver: first.driver.clone(),
                host: first.host.clone(),
                identity: first.identity(),
            },
            run: RunInfo {
                run_id: first.run_id.clone(),
                first_utc: stamps.first().unwrap_or(&"").to_string(),
                last_utc: stamps.last().unwrap_or(&"").to_string(),
                cases: records.len() as u32,
                valid_cases: records.iter().filter(|r| r.valid).count() as u32,
            },
            spec: basis,
            clocks_seen: ClocksSeen {
                clock_mhz_min,
                clock_mhz_max,
                memory_mhz_min,
                memory_mhz_max,
                power_w_max: range(records.iter().map(|r| r.power_w)).1,
                temperature_c_max: range(records.iter().map(|r| r.temperature_c)).1,
                throttle,
            },
            memory_ceilings: fit.memory_ceilings,
            compute_ceilings: fit.compute_ceilings,
            ridge_points: fit.ridge_points,
            points: fit.points,
            gemm_efficiency: fit.gemm_efficiency,
            capacity: capacity_of(records),
            size_efficiency: size_efficiency_of(records),
            launch: launch_of(records),
            link: link_of(records),
            excluded: fit.excluded,
            suspect: records
                .iter()
                .filter(|r| r.valid && !r.flags.is_empty())
                .map(|r| format!("{}: {}", r.case_id(), r.flags))
                .collect(),
            extensions: BTreeMap::new(),
        };
        // What the rows give must be what a reader takes back: every ceiling within the
        // physical bounds, so no output made from it holds an infinity.
        match calibration.problem() {
            None => Ok(calibration),
            Some(why) => Err(Error::Usage(format!(
                "these rows give a calibration no reader would take: {why}"
            ))),
        }
    }
}

/// A run without one valid row measured nothing a reader could use: an error (exit 1) naming
/// the file (`origin`) and the run, for `export` and `estimate` alike, rather than a file or a
/// table of unknowns.
pub fn require_valid(cal: &Calibration, origin: &std::path::Path) -> Result<()> {
    if cal.run.valid_cases > 0 {
        return Ok(());
    }
    let first = cal
        .excluded
        .first()
        .map(|e| format!("; the first: {e}"))
        .unwrap_or_default();
    Err(Error::parse(
        origin,
        1,
        format!(
            "run {} has no valid row ({} rows, every one invalid{first}): it measured nothing \
             to use; rerun it (`roofprobe run`)",
            cal.run.run_id, cal.run.cases
        ),
    ))
}

/// The size-efficiency section from a run's valid `efficiency` rows: per kernel (in the
/// sweep's order), the fit of its sizes ([`crate::stats::fit::two_stage`]) and each size's
/// bandwidth over the fit's asymptote. A kernel with fewer than two valid sizes, or whose
/// times do not rise with size, has no curve.
pub fn size_efficiency_of(records: &[Record]) -> Vec<roofprobe_calibration::SizeEfficiency> {
    use crate::cases::efficiency;
    use roofprobe_calibration::{SizeEfficiency, SizeEfficiencyPoint};
    let mut out = Vec::new();
    for kernel in efficiency::KERNELS {
        for precision in [efficiency::PRECISION] {
            let mut rows: Vec<(u64, f64, String)> = records
                .iter()
                .filter(|r| {
                    r.valid
                        && r.family == Family::Efficiency
                        && r.kernel == kernel.name()
                        && r.precision == precision
                        && r.bytes > 0
                })
                .filter_map(|r| {
                    let t = r.time_median_s.filter(|t| t.is_finite() && *t > 0.0)?;
                    Some((r.bytes, t, r.case_id()))
                })
                .collect();
            rows.sort_by_key(|r| r.0);
            // one row per size: a rerun of a case keeps the last
            rows.dedup_by(|later, earlier| {
                let same = later.0 == earlier.0;
                if same {
                    std::mem::swap(later, earlier);
                }
                same
            });
            let points: Vec<(f64, f64)> = rows.iter().map(|r| (r.0 as f64, r.1)).collect();
            let Some(fit) = crate::stats::fit::two_stage(&points) else {
                continue;
            };
            let asymptotic_gbps = fit.bytes_per_sec / 1e9;
            out.push(SizeEfficiency {
                kernel: kernel.name().to_string(),
                precision,
                constant_secs: fit.latency_secs,
                asymptotic_gbps,
                rms_relative_residual: fit.rms_relative_residual,
                constant_clamped: fit.latency_clamped,
                points: rows
                    .into_iter()
                    .map(|(bytes, secs, case)| {
                        let gbps = bytes as f64 / secs / 1e9;
                        SizeEfficiencyPoint {
                            case,
                            bytes,
                            secs,
                            gbps,
                            efficiency: gbps / asymptotic_gbps,
                        }
                    })
                    .collect(),
            });
        }
    }
    out
}

/// The link section from a run's valid link rows: per host-link copy with valid rows at two or
/// more sizes, `time = latency + bytes / bandwidth` fitted ([`crate::stats::fit`]) over each row's
/// bytes and median time (a copy whose times fit no such line is left out); the PCIe link the
/// rows' notes recorded. `None` when no copy was fitted.
fn link_of(records: &[Record]) -> Option<roofprobe_calibration::Link> {
    use crate::cases::link::{self, Transfer};
    let rows: Vec<&Record> = records
        .iter()
        .filter(|r| r.valid && r.family == Family::Link)
        .collect();
    let transfers: Vec<roofprobe_calibration::LinkTransfer> = Transfer::ALL
        .into_iter()
        .filter(|t| t.over_link())
        .filter_map(|t| {
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.kernel == t.as_str())
                .filter_map(|r| Some((r.bytes as f64, r.time_median_s?)))
                .collect();
            let fit = crate::stats::fit::latency_bandwidth(&points).ok()?;
            Some(roofprobe_calibration::LinkTransfer {
                kernel: t.as_str().to_string(),
                latency_s: fit.latency_secs,
                bandwidth_gbps: fit.bytes_per_sec / 1e9,
                sizes: u32::try_from(fit.points).unwrap_or(u32::MAX),
            })
        })
        .collect();
    if transfers.is_empty() {
        return None;
    }
    let pcie = rows.iter().find_map(|r| link::link_in_note(&r.note));
    Some(roofprobe_calibration::Link {
        pcie: pcie
            .map(|p| format!("PCIe Gen{} x{}", p.generation, p.width))
            .unwrap_or_default(),
        nominal_gbps: pcie.and_then(link::pcie_nominal_gbps),
        transfers,
    })
}

/// The capacity section from a run's valid capacity rows (each figure in `working_set_bytes`);
/// `None` unless both `total` and `free` are there and the figures are consistent.
fn capacity_of(records: &[Record]) -> Option<roofprobe_calibration::Capacity> {
    use crate::cases::capacity::{self, Figure};
    let figure = |f: Figure| {
        records
            .iter()
            .rev()
            .find(|r| r.valid && r.family == Family::Capacity && r.kernel == f.as_str())
            .map(|r| r.working_set_bytes)
    };
    let found = capacity::Capacity {
        total_bytes: figure(Figure::Total)?,
        free_bytes: figure(Figure::Free)?,
        context_bytes: figure(Figure::Context),
        largest_allocation_bytes: figure(Figure::Largest),
    };
    capacity::check(&found)
        .valid
        .then_some(roofprobe_calibration::Capacity {
            total_bytes: found.total_bytes,
            free_bytes: found.free_bytes,
            context_bytes: found.context_bytes,
            largest_allocation_bytes: found.largest_allocation_bytes,
        })
}

/// The launch section from a run's valid launch rows: the empty kernel's and the host round's
/// median time per launch, the timer's least sample (each the smallest non-zero time of its
/// tries); `None` when the run has none of them.
fn launch_of(records: &[Record]) -> Option<roofprobe_calibration::LaunchOverhead> {
    use crate::cases::launch::What;
    let figure = |what: What| {
        records
            .iter()
            .rev()
            .find(|r| r.valid && r.family == Family::Launch && r.kernel == what.as_str())?
            .launch_secs()
            .filter(|s| s.is_finite() && *s > 0.0 && *s < 1.0)
    };
    let found = roofprobe_calibration::LaunchOverhead {
        empty_kernel_secs: figure(What::Empty),
        timer_resolution_secs: figure(What::Timer),
        wake_barrier_secs: figure(What::WakeBarrier),
    };
    (found != roofprobe_calibration::LaunchOverhead::default()).then_some(found)
}

/// The device of one run as its rows describe it (all rows describe the same device): its
/// identity from the first, its SM clock the highest any row saw, its memory clock the device's
/// maximum where the rows record it (a GeForce board computes in P2, below it, so the highest
/// clock a row read is low), else the highest any row read (files from before that column).
fn device_attributes(records: &[Record]) -> DeviceAttributes {
    let Some(first) = records.first() else {
        return DeviceAttributes::default();
    };
    let is_gpu = first.backend == crate::device::BackendKind::Cuda;
    DeviceAttributes {
        is_gpu,
        name: first.device_name.clone(),
        compute_capability: crate::specs::parse_cc(&first.compute_capability),
        sms: is_gpu.then_some(first.units),
        clock_mhz: max_of(records.iter().map(|r| r.clock_mhz)),
        memory_clock_mhz: max_of(records.iter().map(|r| r.max_memory_clock_mhz))
            .or_else(|| max_of(records.iter().map(|r| r.memory_clock_mhz))),
        memory_bus_bits: first.memory_bus_bits,
    }
}

fn max_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values
        .flatten()
        .filter(|v| v.is_finite() && *v > 0.0)
        .reduce(f64::max)
}
