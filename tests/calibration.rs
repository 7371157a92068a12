//! The calibration built from a run (analysis::calibration): its JSON round trip, the size
//! efficiency, capacity and link sections made from their rows, a mix of runs refused, and the
//! errors of reading one (bad JSON naming file, line and expectation; a missing file).

use roofprobe::analysis::calibration::*;
use roofprobe::analysis::fixtures::synthetic_run;
use roofprobe::cases::{Family, Precision};
use roofprobe::results::record::Record;
use roofprobe::specs::SpecBasis;

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
    use roofprobe::cases::efficiency;
    use roofprobe::cases::stream::StreamKernel;
    let (a, bw) = (4e-6, 2e10);
    let mut records: Vec<Record> = efficiency::array_sizes(64 << 20)
        .into_iter()
        .map(|bytes| {
            let case = efficiency::case(StreamKernel::Triad, bytes);
            let t = a + case.work.bytes() as f64 / bw;
            roofprobe::results::fixtures::measured(&case, t, true)
        })
        .collect();
    // an invalid size, a copy with one size and a STREAM row: none of them count
    let bad = efficiency::case(StreamKernel::Triad, 128 << 20);
    records.push(roofprobe::results::fixtures::measured(&bad, 1.0, false));
    let one = efficiency::case(StreamKernel::Copy, 1 << 20);
    records.push(roofprobe::results::fixtures::measured(&one, 1e-4, true));
    records.push(roofprobe::results::fixtures::measured(
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
    let same = |a: &[roofprobe_calibration::SizeEfficiency]| {
        a.len() == 1
            && (a[0].asymptotic_gbps / fit.asymptotic_gbps - 1.0).abs() < 1e-12
            && a[0].points.len() == fit.points.len()
            && a[0]
                .points
                .iter()
                .zip(&fit.points)
                .all(|(p, q)| p.case == q.case && (p.efficiency - q.efficiency).abs() < 1e-12)
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
    use roofprobe::cases::capacity::{self, Figure};
    let row = |figure, bytes: u64, valid| {
        let mut r =
            roofprobe::results::fixtures::measured(&capacity::case(figure, bytes), 1e-5, valid);
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
    use roofprobe::cases::link::{self, Transfer};
    let base = synthetic_run();
    let row = |t: Transfer, bytes: u64, secs: f64, valid: bool| {
        let mut r = roofprobe::results::fixtures::measured(&link::case(t, bytes), secs, valid);
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
