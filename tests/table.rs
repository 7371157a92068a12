//! The measurement table and its blocks (render::table), from measured rows.

use roofprobe::cases::latency;
use roofprobe::cases::stream::StreamKernel;
use roofprobe::cases::Precision;
use roofprobe::render::table::*;
use roofprobe::results::fixtures::measured;
use roofprobe::results::record::Record;
use roofprobe::units::bytes;

#[test]
fn formats() {
    assert_eq!(figure(None), "-");
    assert_eq!(figure(Some(1234.5)), "1234");
    assert_eq!(figure(Some(12.345)), "12.3");
    assert_eq!(figure(Some(1.2345)), "1.23");
    assert_eq!(duration(Some(2.0)), "2.000 s");
    assert_eq!(duration(Some(0.0021)), "2.100 ms");
    assert_eq!(duration(Some(3.5e-6)), "3.50 µs");
    assert_eq!(duration(Some(4e-9)), "4.0 ns");
    assert_eq!(bytes(512), "512 B");
    assert_eq!(bytes(256 << 20), "256.0 MiB");
    assert_eq!(bytes(3 << 30), "3.0 GiB");
}

#[test]
fn table_shows_figures_for_valid_rows_and_reasons_for_invalid_ones() {
    let ok = measured(
        &StreamKernel::Triad.case(Precision::F32, 1 << 20),
        1e-3,
        true,
    );
    let bad = measured(
        &StreamKernel::Copy.case(Precision::F64, 1 << 20),
        1e-3,
        false,
    );
    let t = render(&[ok, bad]);
    let lines: Vec<&str> = t.lines().filter(|l| !l.is_empty()).collect();
    assert!(lines[0].contains("(host, 2 threads)") || lines[0].contains("(host,"));
    assert!(lines[1].starts_with("case"));
    assert!(lines[2].starts_with("stream/triad/f32"));
    assert!(lines[2].contains("12.6"), "{}", lines[2]); // 12 MiB*... / 1 ms
    assert!(lines[3].starts_with("stream/copy/f64"));
    assert!(lines[3].contains("invalid: [3] is 1"));
    assert!(!lines[3].contains("16.8"), "no figure for an invalid row");
}

/// Capacity rows show their figure as the working set, no GB/s, and again on one line
/// in binary units after the table; an invalid row has no figure there.
#[test]
fn capacity_rows_show_their_figures_in_gib() {
    use roofprobe::cases::capacity::{self, Figure};
    let row = |figure, bytes, valid| measured(&capacity::case(figure, bytes), 1e-5, valid);
    let rows = [
        row(Figure::Total, 24 << 30, true),
        row(Figure::Free, 3 << 29, true),
        row(Figure::Largest, 1 << 30, false),
    ];
    let t = render(&rows);
    let total = t
        .lines()
        .find(|l| l.starts_with("capacity/total/u8"))
        .unwrap();
    assert!(
        total.contains("24.0 GiB") && !total.contains("0.80"),
        "{total}"
    );
    assert!(
        t.contains("\ncapacity: total 24.0 GiB, free 1.5 GiB\n"),
        "{t}"
    );
    assert_eq!(capacity_block(&[]), "");
}

/// Launch rows show their time in the median column and again on one line, said as what
/// each is; an invalid one has no figure there; no launch rows, no line.
#[test]
fn launch_rows_show_their_time_per_launch_on_one_line() {
    use roofprobe::cases::launch::{self, What};
    let rows = [
        measured(&launch::case(What::Empty), 4e-6, true),
        measured(&launch::case(What::Timer), 1e-6, true),
        measured(&launch::case(What::WakeBarrier), 2e-5, false),
    ];
    let t = render(&rows);
    let empty = t
        .lines()
        .find(|l| l.starts_with("launch/empty/i32"))
        .unwrap();
    assert!(
        empty.contains("4.00 µs") && empty.ends_with(" ok"),
        "{empty}"
    );
    assert!(
        t.contains("\nlaunch: empty kernel 4.00 µs per launch, event timer resolution 900.0 ns\n"),
        "{t}"
    );
    assert_eq!(launch_block(&[]), "");
    let stream = measured(
        &StreamKernel::Triad.case(Precision::F32, 1 << 20),
        1e-3,
        true,
    );
    assert!(!render(&[stream]).contains("\nlaunch:"));
}

/// Link rows of a copy at several sizes are fitted on one line, latency and asymptote,
/// against the nominal rate of the link their notes recorded; an invalid row is left out;
/// a copy at one size has no line.
#[test]
fn link_rows_show_their_fit_against_the_link() {
    use roofprobe::cases::link::{self, PcieLink, Transfer};
    let note = link::link_note(Ok((
        PcieLink {
            generation: 4,
            width: 16,
        },
        None,
    )));
    let row = |t, bytes: u64, secs: f64, valid| {
        let mut r = measured(&link::case(t, bytes), secs, valid);
        r.note = note.clone();
        r
    };
    let mut rows: Vec<Record> = [4u64 << 10, 1 << 20, 64 << 20]
        .iter()
        .map(|&b| row(Transfer::HostToDevice, b, 8e-6 + b as f64 / 25e9, true))
        .collect();
    rows.push(row(Transfer::HostToDevice, 16 << 20, 1.0, false));
    rows.push(row(Transfer::DeviceToHost, 4 << 10, 1e-5, true));
    let t = render(&rows);
    let line = t
        .lines()
        .find(|l| l.trim_start().starts_with("host_to_device_memcpy_ce "))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(
        line.contains("+ bytes / 25.00 GB/s (3 sizes; 79% of PCIe Gen4 x16 nominal 31.5 GB/s)"),
        "{line}"
    );
    assert!(!t.contains("  device_to_host_memcpy_ce "), "{t}");
    assert_eq!(link_block(&[]), "");
}

/// Peer rows are listed with their direction, figure and path; an invalid one is left out.
#[test]
fn peer_rows_show_direction_figure_and_path() {
    use roofprobe::cases::link::{self, Transfer};
    let row = |t, peer, valid| {
        let mut r = measured(&link::peer_case(t, 1 << 20, peer), 1e-4, valid);
        r.device_id = "cuda:0".to_string();
        r.note = "cuMemcpyPeerAsync …; counts the copy's bytes once; NVLink, 18 active \
                  links to it (NVML)"
            .to_string();
        r
    };
    let rows = [
        row(Transfer::PeerRead, 1, true),
        row(Transfer::PeerWrite, 1, true),
        row(Transfer::PeerWriteBidirectional, 2, false),
    ];
    let t = render(&rows);
    let lines: Vec<&str> = t
        .lines()
        .skip_while(|l| !l.starts_with("peer to peer"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), 2, "{t}");
    assert!(lines[0].contains("device_to_device_memcpy_read_ce"), "{t}");
    assert!(lines[0].contains("cuda:1 -> cuda:0"), "{t}");
    assert!(lines[1].contains("cuda:0 -> cuda:1"), "{t}");
    // 1 MiB in 0.1 ms
    assert!(
        lines[1].contains("10.49 GB/s  NVLink, 18 active links"),
        "{t}"
    );
    assert_eq!(peer_block(&[]), "");
}

/// Latency rows are listed again as ns and cycles per load, from the fastest sample, with
/// the plateaus they form; an invalid row has no figure.
#[test]
fn latency_rows_show_ns_cycles_and_plateaus() {
    let row = |kib: u64, median: f64, valid: bool| {
        let case = latency::case(latency::HOST_KERNEL, 64, kib << 10, 1000);
        let mut r = measured(&case, median, valid);
        r.clock_mhz = Some(4000.0);
        r
    };
    // fastest samples (0.9 × median) of 1000 loads: 1 ns, then 5 ns
    let m = 1e-6 / 0.9;
    let rows = [
        row(4, m, true),
        row(8, m, true),
        row(16, 5.0 * m, true),
        row(32, 5.0 * m, true),
        row(64, m, false),
    ];
    let t = render(&rows);
    let block: Vec<&str> = t
        .lines()
        .skip_while(|l| !l.starts_with("latency/chase:"))
        .collect();
    assert!(block.len() > 7, "{t}");
    assert!(block[2].starts_with("latency/chase/i32/4 "), "{}", block[2]);
    assert!(
        block[2].contains(" 1.00 ") && block[2].contains(" 4.00 "),
        "{}",
        block[2]
    );
    assert!(
        block[4].contains(" 5.00 ") && block[4].contains(" 20.0 "),
        "{}",
        block[4]
    );
    assert!(block[6].contains("invalid:") && !block[6].contains("1.00"));
    assert_eq!(
        &block[7..],
        [
            "  plateau 4.0 KiB .. 8.0 KiB: 1.00 ns, 4.00 cycles (2 points)",
            "  plateau 16.0 KiB .. 32.0 KiB: 5.00 ns, 20.0 cycles (2 points)",
        ]
    );
    // no latency rows, no block
    let stream = measured(
        &StreamKernel::Triad.case(Precision::F32, 1 << 20),
        1e-3,
        true,
    );
    assert!(!render(&[stream]).contains("ns/load"));
}

#[test]
fn a_suspect_figure_does_not_read_ok() {
    let mut r = measured(
        &StreamKernel::Triad.case(Precision::F32, 1 << 20),
        1e-3,
        true,
    );
    r.flags = "high_cv(12.0%);busy_host(1.00 CPUs)".into();
    let t = render(&[r]);
    let line = t.lines().find(|l| l.starts_with("stream/triad")).unwrap();
    assert!(
        line.ends_with("  suspect: high_cv(12.0%), busy_host(1.00 CPUs)"),
        "{line}"
    );
    assert!(!line.ends_with(" ok"), "{line}");
}

#[test]
fn share_of_theory_is_shown_where_known() {
    let case = roofprobe::cases::peak::case(Precision::F32, 100, 1000, 128);
    let mut r = measured(&case, 1e-3, true);
    r.theory_gflops = Some(r.gflops.unwrap() * 2.0);
    let t = render(std::slice::from_ref(&r));
    let line = t.lines().find(|l| l.starts_with("peak/fma/f32")).unwrap();
    assert!(line.contains("50.0%"), "{line}");
    let gemm = roofprobe::cases::gemm::case(
        "simd",
        Precision::F32,
        roofprobe::cases::gemm::Shape::new(8192, 28672, 8192),
    );
    let mut g = measured(&gemm, 1.0, true);
    g.ratio_to_reference = Some(0.934);
    let t = render(&[g, r.clone()]);
    let line = t.lines().find(|l| l.starts_with("gemm/simd")).unwrap();
    assert!(line.ends_with("ok (0.93 x gemm-crate)"), "{line}");
    // columns stay aligned under the longest id: the working set ends at the same place
    let peak = t.lines().find(|l| l.starts_with("peak/fma/f32")).unwrap();
    let end = |l: &str| l.find('B').unwrap();
    assert_eq!(end(line), end(peak), "{line}\n{peak}");
    let stream = measured(&StreamKernel::Copy.case(Precision::F32, 10), 1e-3, true);
    let t = render(&[stream]);
    assert!(t
        .lines()
        .any(|l| l.starts_with("stream/copy/f32") && l.contains(" - ")));
}
