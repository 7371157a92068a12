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
/// sweep's order), the fit of its sizes ([`crate::cases::efficiency::fit`]) and each size's
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
            let Some(fit) = efficiency::fit(&points) else {
                continue;
            };
            let asymptotic_gbps = fit.asymptotic_bytes_per_sec / 1e9;
            out.push(SizeEfficiency {
                kernel: kernel.name().to_string(),
                precision,
                constant_secs: fit.constant_secs,
                asymptotic_gbps,
                rms_relative_residual: fit.rms_relative_residual,
                constant_clamped: fit.constant_clamped,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::synthetic_run;
    use crate::specs::SpecBasis;

    #[test]
    fn a_run_round_trips_through_json() {
        let cal = Calibration::from_records(&synthetic_run(), None).unwrap();
        assert_eq!(cal.schema, SCHEMA);
        assert!(matches!(&cal.spec, SpecBasis::Sheet { entry, .. } if entry == "A100 80GB SXM4"));
        assert_eq!(cal.run.cases, 12);
        assert_eq!(cal.run.valid_cases, 10);
        assert_eq!(cal.clocks_seen.clock_mhz_max, Some(1410.0));
        let back = Calibration::from_json("x.json", &cal.to_json()).unwrap();
        assert_eq!(back, cal);
        let dram = cal.dram_gbps().unwrap();
        assert!((dram - 1500.0).abs() < 1e-6);
        let ridge = cal
            .ridge_flop_per_byte(Family::Peak, Precision::F32)
            .unwrap();
        assert!((ridge - 10.0).abs() < 1e-9);
        assert_eq!(
            cal.title(),
            "NVIDIA A100-SXM4-80GB (cuda:0) on lab, 2026-01-01"
        );
    }

    /// The size sweep's valid rows make the `size_efficiency` section: per kernel the fit of
    /// its sizes and each size's bandwidth over the asymptote; an invalid row, another family's
    /// or a kernel with one size does not count; the section reads back and is checked.
    #[test]
    fn efficiency_rows_make_the_size_efficiency_section() {
        use crate::cases::efficiency;
        use crate::cases::stream::StreamKernel;
        let (a, bw) = (4e-6, 2e10);
        let mut records: Vec<Record> = efficiency::array_sizes(64 << 20)
            .into_iter()
            .map(|bytes| {
                let case = efficiency::case(StreamKernel::Triad, bytes);
                let t = a + case.work.bytes() as f64 / bw;
                crate::results::fixtures::measured(&case, t, true)
            })
            .collect();
        // an invalid size, a copy with one size and a STREAM row: none of them count
        let bad = efficiency::case(StreamKernel::Triad, 128 << 20);
        records.push(crate::results::fixtures::measured(&bad, 1.0, false));
        let one = efficiency::case(StreamKernel::Copy, 1 << 20);
        records.push(crate::results::fixtures::measured(&one, 1e-4, true));
        records.push(crate::results::fixtures::measured(
            &StreamKernel::Triad.case(Precision::F32, 1 << 20),
            1e-6,
            true,
        ));
        let section = size_efficiency_of(&records);
        assert_eq!(section.len(), 1, "{section:?}");
        let fit = &section[0];
        assert_eq!(
            (fit.kernel.as_str(), fit.precision),
            ("triad", Precision::F32)
        );
        assert!((fit.constant_secs - a).abs() < 1e-10, "{fit:?}");
        assert!((fit.asymptotic_gbps - bw / 1e9).abs() < 1e-6, "{fit:?}");
        assert!(fit.rms_relative_residual < 1e-9 && !fit.constant_clamped);
        assert_eq!(fit.points.len(), 7);
        assert_eq!(fit.points[0].case, "efficiency/triad/f32/1024");
        assert_eq!(fit.points[0].bytes, 3 << 20);
        // a small size pays the constant: below the asymptote
        assert!(fit.points[0].efficiency < fit.points[6].efficiency);
        assert!(fit.points[6].efficiency < 1.0);
        let cal = Calibration::from_records(&records, None).unwrap();
        let same =
            |a: &[roofprobe_calibration::SizeEfficiency]| {
                a.len() == 1
                    && (a[0].asymptotic_gbps / fit.asymptotic_gbps - 1.0).abs() < 1e-12
                    && a[0].points.len() == fit.points.len()
                    && a[0].points.iter().zip(&fit.points).all(|(p, q)| {
                        p.case == q.case && (p.efficiency - q.efficiency).abs() < 1e-12
                    })
            };
        assert!(same(&cal.size_efficiency), "{:?}", cal.size_efficiency);
        let back = Calibration::from_json("c.json", &cal.to_json()).unwrap();
        // (the writer rounds the last bits of a figure)
        assert!(same(&back.size_efficiency), "{:?}", back.size_efficiency);
        // a point whose efficiency does not follow from its figures is refused
        let mut damaged = cal.clone();
        damaged.size_efficiency[0].points[2].efficiency *= 1.5;
        let e = Calibration::from_json("c.json", &damaged.to_json()).unwrap_err();
        assert!(
            e.to_string()
                .contains("size_efficiency[0].points[2].efficiency"),
            "{e}"
        );
    }

    /// The capacity section comes from the valid capacity rows of the run, each figure its
    /// row's `working_set_bytes`; without `total` and `free`, or with figures that disagree,
    /// there is none. It survives the JSON round trip.
    #[test]
    fn capacity_rows_make_the_capacity_section() {
        use crate::cases::capacity::{self, Figure};
        let row = |figure, bytes: u64, valid| {
            let mut r =
                crate::results::fixtures::measured(&capacity::case(figure, bytes), 1e-5, valid);
            r.run_id = synthetic_run()[0].run_id.clone();
            r
        };
        let mut rows = synthetic_run();
        rows.extend([
            row(Figure::Total, 80 << 30, true),
            row(Figure::Free, 79 << 30, true),
            row(Figure::Context, 1 << 30, true),
            row(Figure::Largest, 78 << 30, true),
        ]);
        let identity_of = |rows: &mut Vec<Record>| {
            let first = rows[0].clone();
            for r in rows.iter_mut() {
                r.host = first.host.clone();
                r.backend = first.backend;
                r.device_id = first.device_id.clone();
                r.device_name = first.device_name.clone();
                r.compute_capability = first.compute_capability.clone();
                r.units = first.units;
                r.llc_bytes = first.llc_bytes;
                r.memory_bus_bits = first.memory_bus_bits;
                r.driver = first.driver.clone();
                r.vendor = first.vendor.clone();
                r.cpu_family = first.cpu_family.clone();
                r.cpu_model = first.cpu_model.clone();
                r.microarch = first.microarch.clone();
                r.isa = first.isa.clone();
                r.uuid = first.uuid.clone();
                r.pci_bus_id = first.pci_bus_id.clone();
                r.vbios = first.vbios.clone();
                r.ecc = first.ecc.clone();
                r.mig = first.mig.clone();
                r.power_limit_w = first.power_limit_w;
                r.app_clock_mhz = first.app_clock_mhz;
                r.app_memory_clock_mhz = first.app_memory_clock_mhz;
            }
        };
        identity_of(&mut rows);
        let cal = Calibration::from_records(&rows, None).unwrap();
        let c = cal.capacity.expect("a capacity section");
        assert_eq!(
            (
                c.total_bytes,
                c.free_bytes,
                c.context_bytes,
                c.largest_allocation_bytes
            ),
            (80 << 30, 79 << 30, Some(1 << 30), Some(78 << 30))
        );
        assert_eq!(
            Calibration::from_json("x.json", &cal.to_json()).unwrap(),
            cal
        );
        // largest above free: no section
        let mut bad = rows.clone();
        bad.last_mut().unwrap().working_set_bytes = 81 << 30;
        bad.last_mut().unwrap().elements = 81 << 30;
        assert_eq!(
            Calibration::from_records(&bad, None).unwrap().capacity,
            None
        );
        // no capacity rows: none
        let plain = Calibration::from_records(&synthetic_run(), None).unwrap();
        assert_eq!(plain.capacity, None);
        assert!(!plain.to_json().contains("\"capacity\""));
    }

    /// The link section fits each host-link copy's valid rows (time = latency + bytes /
    /// bandwidth), takes the PCIe link from their notes, leaves out an invalid row and a copy
    /// with one size, and survives the JSON round trip; without link rows there is none.
    #[test]
    fn link_rows_make_the_link_section() {
        use crate::cases::link::{self, Transfer};
        let base = synthetic_run();
        let row = |t: Transfer, bytes: u64, secs: f64, valid: bool| {
            let mut r = crate::results::fixtures::measured(&link::case(t, bytes), secs, valid);
            r.run_id = base[0].run_id.clone();
            r.note = format!(
                "pinned; {}",
                link::link_note(Ok((
                    link::PcieLink {
                        generation: 5,
                        width: 16
                    },
                    None
                )))
            );
            r
        };
        let mut rows = base.clone();
        for bytes in [4u64 << 10, 1 << 20, 256 << 20] {
            rows.push(row(
                Transfer::HostToDevice,
                bytes,
                10e-6 + bytes as f64 / 50e9,
                true,
            ));
            rows.push(row(
                Transfer::DeviceToHost,
                bytes,
                12e-6 + bytes as f64 / 40e9,
                true,
            ));
        }
        // an invalid row of a wild time does not count; one size alone makes no fit
        rows.push(row(Transfer::HostToDevice, 64 << 20, 1.0, false));
        rows.push(row(Transfer::HostToDevicePageable, 4 << 10, 1e-4, true));
        for r in rows.iter_mut() {
            let first = base[0].clone();
            r.host = first.host;
            r.device_id = first.device_id;
            r.device_name = first.device_name;
            r.compute_capability = first.compute_capability;
            r.backend = first.backend;
            r.units = first.units;
            r.llc_bytes = first.llc_bytes;
            r.memory_bus_bits = first.memory_bus_bits;
            r.driver = first.driver;
            r.uuid = first.uuid;
            r.vendor = first.vendor;
            r.cpu_family = first.cpu_family;
            r.cpu_model = first.cpu_model;
            r.microarch = first.microarch;
            r.isa = first.isa;
            r.pci_bus_id = first.pci_bus_id;
            r.vbios = first.vbios;
            r.ecc = first.ecc;
            r.mig = first.mig;
            r.power_limit_w = first.power_limit_w;
            r.app_clock_mhz = first.app_clock_mhz;
            r.app_memory_clock_mhz = first.app_memory_clock_mhz;
        }
        let cal = Calibration::from_records(&rows, None).unwrap();
        let l = cal.link.clone().expect("a link section");
        assert_eq!(l.pcie, "PCIe Gen5 x16");
        assert!((l.nominal_gbps.unwrap() - 63.015).abs() < 0.01);
        assert_eq!(l.transfers.len(), 2, "{l:?}");
        let h2d = l.transfer("host_to_device_memcpy_ce").unwrap();
        assert!((h2d.latency_s - 10e-6).abs() < 1e-9 && (h2d.bandwidth_gbps - 50.0).abs() < 1e-6);
        assert_eq!(h2d.sizes, 3);
        let d2h = l.transfer("device_to_host_memcpy_ce").unwrap();
        assert!((d2h.bandwidth_gbps - 40.0).abs() < 1e-6);
        // through the JSON: the same fits, to the last digits the text keeps
        let back = Calibration::from_json("x.json", &cal.to_json())
            .unwrap()
            .link
            .unwrap();
        assert_eq!(
            (back.pcie.as_str(), back.transfers.len()),
            ("PCIe Gen5 x16", 2)
        );
        for (a, b) in back.transfers.iter().zip(&l.transfers) {
            assert_eq!((&a.kernel, a.sizes), (&b.kernel, b.sizes));
            assert!((a.latency_s / b.latency_s - 1.0).abs() < 1e-12);
            assert!((a.bandwidth_gbps / b.bandwidth_gbps - 1.0).abs() < 1e-12);
        }
        let plain = Calibration::from_records(&synthetic_run(), None).unwrap();
        assert_eq!(plain.link, None);
        assert!(!plain.to_json().contains("\"link\""));
    }

    #[test]
    fn rows_of_several_runs_are_refused() {
        let mut rows = synthetic_run();
        rows[3].run_id = "other".into();
        let e = Calibration::from_records(&rows, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("come from 2 runs") && e.contains("other"), "{e}");
        assert!(Calibration::from_records(&[], None).is_err());
    }

    #[test]
    fn bad_json_names_file_line_and_expectation() {
        let err = |t: &str| Calibration::from_json("c.json", t).unwrap_err().to_string();
        assert_eq!(
            err(""),
            "c.json:1: empty file; expected a roofprobe calibration JSON (roofprobe-calibration/2)"
        );
        assert!(
            err("{\n  \"schema\": \"roofprobe-calibration/2\",\n  \"device\": ")
                .starts_with("c.json:3: not valid JSON")
        );
        let e = err("[1, 2]");
        assert!(e.contains("expected a JSON object"), "{e}");
        assert_eq!(
            err("{\"name\": \"x\"}"),
            "c.json:1: not a roofprobe calibration: no `schema` field; expected `roofprobe-calibration/2`"
        );
        assert!(err("{\n\"schema\": \"roofprobe-csv/1\"}")
            .starts_with("c.json:2: schema \"roofprobe-csv/1\" is not a roofprobe calibration"));
        let cal = Calibration::from_records(&synthetic_run(), None).unwrap();
        let json = cal.to_json();
        let e = err(&json.replace(SCHEMA, "roofprobe-calibration/0"));
        assert!(
            e.starts_with("c.json:2: schema `roofprobe-calibration/0` is not supported"),
            "{e}"
        );
        // a field of the wrong type: line of the field
        let broken = json.replacen("\"compute_units\": 108", "\"compute_units\": \"many\"", 1);
        let line = broken.lines().position(|l| l.contains("\"many\"")).unwrap() + 1;
        let e = err(&broken);
        assert!(
            e.starts_with(&format!("c.json:{line}: does not match")),
            "{e}"
        );
    }

    #[test]
    fn load_reads_files_and_names_missing_ones() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        let cal = Calibration::from_records(&synthetic_run(), None).unwrap();
        std::fs::write(&p, cal.to_json()).unwrap();
        assert_eq!(Calibration::load(&p).unwrap(), cal);
        let missing = Calibration::load(dir.path().join("none.json")).unwrap_err();
        assert!(matches!(missing, roofprobe_calibration::Error::Io { .. }));
    }
}
