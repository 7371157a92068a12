//! The run's CSV row (results::record), its CSV (results::csv) and its checks
//! (results::check): figures from the median and the work table, round trips, the readers'
//! refusals, the sink's writes.

use roofprobe::cases::stream::StreamKernel;
use roofprobe::cases::Precision;
use roofprobe::device::Conditions;
use roofprobe::results::check::*;
use roofprobe::results::csv::*;
use roofprobe::results::record::*;
use roofprobe::Error;
use std::path::Path;

use roofprobe::results::fixtures::{identity, measured};

#[test]
fn figures_come_from_the_median_and_the_work_table() {
    let case = StreamKernel::Triad.case(Precision::F32, 1_000_000);
    let r = measured(&case, 1e-3, true);
    assert_eq!(r.bytes, 12_000_000);
    assert_eq!(r.flops, 2_000_000);
    assert!((r.gbps.unwrap() - 12.0).abs() < 1e-9);
    assert!((r.gflops.unwrap() - 2.0).abs() < 1e-9);
    assert_eq!(r.status, "ok");
    assert_eq!(r.case_id(), case.id());
}

/// A launch row does no work and its figure is its time: it reads back with no bytes or
/// flops (and the timer's with no working set), but one that claims work is refused, and
/// another family's row without work still is.
#[test]
fn a_launch_row_has_no_work_and_no_other_row_may() {
    use roofprobe::cases::launch::{self, What};
    let timer = measured(&launch::case(What::Timer), 1e-6, true);
    assert_eq!(
        (timer.bytes, timer.flops, timer.gbps, timer.gflops),
        (0, 0, None, None)
    );
    check_row(&timer).unwrap();
    check_row(&measured(&launch::case(What::Empty), 4e-6, true)).unwrap();
    let mut worked = timer.clone();
    worked.bytes = 8;
    assert!(check_row(&worked)
        .unwrap_err()
        .contains("a launch row does no work"));
    let mut stream = measured(&StreamKernel::Copy.case(Precision::F32, 1000), 1e-3, true);
    (stream.bytes, stream.flops, stream.gbps, stream.intensity) = (0, 0, None, None);
    assert!(check_row(&stream)
        .unwrap_err()
        .contains("the case did no work"));
}

#[test]
fn invalid_rows_carry_no_numbers() {
    let case = StreamKernel::Copy.case(Precision::F64, 1000);
    let r = measured(&case, 1e-3, false);
    assert!(!r.valid);
    assert!(r.status.starts_with("invalid: [3] is 1"));
    assert_eq!(
        (r.gbps, r.gflops, r.time_median_s, r.cv),
        (None, None, None, None)
    );
    let failed = Record::new(
        &identity(),
        "t".into(),
        &case,
        Outcome::Failed {
            error: "out of memory",
        },
        &Conditions::default(),
        String::new(),
    );
    assert_eq!(failed.status, "error: out of memory");
    assert_eq!(failed.gbps, None);
}

#[test]
fn header_is_derived_and_starts_with_schema() {
    let h = header();
    assert_eq!(h[0], "schema");
    assert!(h.contains(&"gbps".to_string()));
    assert_eq!(h.len(), 40 + ADDED_IN_2.len());
    for added in ADDED_IN_2 {
        assert!(h.iter().any(|c| c == added), "{added}");
    }
}

#[test]
fn csv_round_trips() {
    let records: Vec<Record> = roofprobe::cases::stream::cases(|_| 1000)
        .iter()
        .enumerate()
        .map(|(i, c)| measured(c, 1e-4 * (i + 1) as f64, i % 5 != 0))
        .collect();
    let bytes = to_csv_bytes(&records);
    let back = parse_csv(Path::new("x.csv"), &bytes).unwrap();
    assert_eq!(back, records);
}

/// A file of the schema before (no identity columns) still reads, its identity empty; its
/// rows must say that schema.
#[test]
fn schema_1_files_still_read() {
    let case = StreamKernel::Copy.case(Precision::F32, 10);
    let mut row = measured(&case, 1e-3, true);
    row.schema = SCHEMA_1.into();
    let text = String::from_utf8(to_csv_bytes(&[row.clone()])).unwrap();
    let columns: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let values: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(columns.len(), values.len(), "no quoted commas in this row");
    let keep: Vec<usize> = (0..columns.len())
        .filter(|&i| !ADDED_IN_2.contains(&columns[i]))
        .collect();
    let pick = |fields: &[&str]| {
        keep.iter()
            .map(|&i| fields[i])
            .collect::<Vec<_>>()
            .join(",")
    };
    let old = format!("{}\n{}\n", pick(&columns), pick(&values));
    assert_eq!(old.lines().next().unwrap().split(',').count(), 40);
    let back = parse_csv(Path::new("old.csv"), old.as_bytes()).unwrap();
    let mut want = row.clone();
    want.vendor.clear();
    want.cpu_family.clear();
    want.cpu_model.clear();
    want.microarch.clear();
    want.isa.clear();
    want.stopped_by.clear();
    assert_eq!(back, vec![want]);
    // a schema-1 header with rows that claim another schema is refused
    let claims_2 = old.replace(SCHEMA_1, SCHEMA);
    let e = parse_csv(Path::new("old.csv"), claims_2.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("old.csv:2: schema `roofprobe-csv/2`"), "{e}");
}

/// A schema-2 file written before `max_memory_clock_mhz` existed ([`OPTIONAL_IN_2`]) still
/// reads, that column empty, and so does one with it.
#[test]
fn schema_2_files_without_the_optional_columns_still_read() {
    use roofprobe::results::record::OPTIONAL_IN_2;
    let case = StreamKernel::Copy.case(Precision::F32, 10);
    let mut row = measured(&case, 1e-3, true);
    row.max_memory_clock_mhz = Some(9751.0);
    let text = String::from_utf8(to_csv_bytes(&[row.clone()])).unwrap();
    assert_eq!(
        parse_csv(Path::new("new.csv"), text.as_bytes()).unwrap(),
        vec![row.clone()]
    );
    let columns: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let values: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(columns.len(), values.len(), "no quoted commas in this row");
    let keep: Vec<usize> = (0..columns.len())
        .filter(|&i| !OPTIONAL_IN_2.contains(&columns[i]))
        .collect();
    assert_eq!(keep.len() + OPTIONAL_IN_2.len(), columns.len());
    let pick = |fields: &[&str]| {
        keep.iter()
            .map(|&i| fields[i])
            .collect::<Vec<_>>()
            .join(",")
    };
    let old = format!("{}\n{}\n", pick(&columns), pick(&values));
    let back = parse_csv(Path::new("old.csv"), old.as_bytes()).unwrap();
    row.max_memory_clock_mhz = None;
    assert_eq!(back, vec![row]);
}

#[test]
fn csv_sink_creates_with_the_first_row_flushes_each_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.csv");
    let mut sink = CsvSink::new(&path);
    // nothing measured, nothing written
    assert!(!path.exists() && !sink.written());
    let case = StreamKernel::Copy.case(Precision::F32, 10);
    sink.write(&measured(&case, 1e-3, true)).unwrap();
    // readable before the sink is dropped
    assert_eq!(read_csv(&path).unwrap().len(), 1);
    sink.write(&measured(&case, 2e-3, false)).unwrap();
    assert_eq!(read_csv(&path).unwrap().len(), 2);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let mut again = CsvSink::new(&path);
    let e = again.write(&measured(&case, 1e-3, true)).unwrap_err();
    assert!(matches!(e, Error::Usage(_)), "{e}");
    assert_eq!(read_csv(&path).unwrap().len(), 2);
}

#[test]
fn bad_files_name_file_line_and_expectation() {
    let p = Path::new("bad.csv");
    let err = |b: &[u8]| parse_csv(p, b).unwrap_err().to_string();
    assert_eq!(
        err(b""),
        "bad.csv:1: empty file; expected a roofprobe CSV with a header line"
    );
    assert!(err(b"a,b\n1,2\n").starts_with("bad.csv:1: not a roofprobe results CSV"));
    let case = StreamKernel::Copy.case(Precision::F32, 10);
    let good = to_csv_bytes(&[measured(&case, 1e-3, true), measured(&case, 1e-3, true)]);
    let text = String::from_utf8(good).unwrap();
    // truncated last row: said to look cut off
    let cut = &text[..text.len() - 30];
    assert!(
        err(cut.as_bytes()).starts_with("bad.csv:3: the last row has")
            && err(cut.as_bytes()).contains("looks cut off"),
        "{}",
        err(cut.as_bytes())
    );
    // a number that is not one
    let broken = text.replacen(",10,80,80,", ",lots,80,80,", 1);
    let e = err(broken.as_bytes());
    assert!(e.starts_with("bad.csv:2: column `elements`"), "{e}");
    // the same line with Windows line ends (the reader's own count said 1, the header)
    let e = err(broken.replace('\n', "\r\n").as_bytes());
    assert!(e.starts_with("bad.csv:2: column `elements`"), "{e}");
    // in the second row, either way
    let at = text.rfind(",10,80,80,").unwrap();
    let second = format!(
        "{}{}",
        &text[..at],
        text[at..].replacen(",10,", ",lots,", 1)
    );
    for text in [second.clone(), second.replace('\n', "\r\n")] {
        let e = err(text.as_bytes());
        assert!(e.starts_with("bad.csv:3: column `elements`"), "{e}");
    }
    // another schema
    let other = text.replace(SCHEMA, "roofprobe-csv/9");
    assert!(err(other.as_bytes()).contains("schema `roofprobe-csv/9` is not supported"));
    // a header without rows
    let head_only = text.lines().next().unwrap().to_string() + "\n";
    assert!(err(head_only.as_bytes()).contains("no measurements"));
    // a column missing
    let fewer = text.replacen("schema,run_id", "schema,runid", 1);
    assert!(err(fewer.as_bytes()).contains("lacks column(s) run_id"));
}

fn one_row_error(r: &Record) -> String {
    let bytes = to_csv_bytes(std::slice::from_ref(r));
    parse_csv(Path::new("r.csv"), &bytes)
        .unwrap_err()
        .to_string()
}

/// What fuzzing found `export` accepting (`gbps = 1e30`, `invalid:` rows counted as valid, a
/// clock of -4000 MHz) and `report` printing (NaN, inf, negative GB/s on `ok` rows): each is
/// A row made twice as fast still reads (its figures follow its times), with twice the
/// bandwidth and half the median time.
#[test]
fn a_speed_scaled_row_stays_consistent() {
    let case = StreamKernel::Triad.case(Precision::F32, 1000);
    let good = measured(&case, 1e-3, true);
    let mut fast = good.clone();
    fast.scale_speed(2.0);
    check_row(&fast).unwrap();
    assert_eq!(fast.gbps.unwrap(), good.gbps.unwrap() * 2.0);
    assert_eq!(
        fast.time_median_s.unwrap(),
        good.time_median_s.unwrap() / 2.0
    );
}

/// refused, with its line and what it should have been.
#[test]
fn figures_that_cannot_be_are_refused() {
    let case = StreamKernel::Triad.case(Precision::F32, 1000);
    let good = measured(&case, 1e-3, true);
    check_row(&good).unwrap();
    type Mutation = Box<dyn Fn(&mut Record)>;
    let cases: Vec<(Mutation, &str)> = vec![
        (
            Box::new(|r| r.gbps = Some(1e30)),
            "`gbps` is 1000000000000000000000000000000 but bytes / time_median_s / 1e9 is 0.012",
        ),
        (Box::new(|r| r.gbps = Some(f64::NAN)), "`gbps` is NaN"),
        (Box::new(|r| r.gbps = Some(f64::INFINITY)), "`gbps` is inf"),
        (Box::new(|r| r.gbps = Some(-0.012)), "`gbps` is -0.012"),
        (
            Box::new(|r| r.gflops = None),
            "`gflops` is empty but flops / time_median_s / 1e9 is",
        ),
        (
            Box::new(|r| {
                r.time_median_s = Some(-1e-3);
            }),
            "`time_median_s` is -0.001; it must be finite, positive",
        ),
        (
            Box::new(|r| r.time_max_s = Some(1e-4)),
            "times out of order",
        ),
        (
            Box::new(|r| r.cv = Some(0.5)),
            "`cv` is 0.5 but time_stddev_s / time_mean_s",
        ),
        (
            Box::new(|r| r.clock_mhz = Some(-4000.0)),
            "`clock_mhz` is -4000",
        ),
        (
            Box::new(|r| r.temperature_c = Some(f64::NAN)),
            "`temperature_c` is NaN",
        ),
        (
            Box::new(|r| r.status = "invalid: [0] is 1, should be 2".into()),
            "`valid` is true but `status` is `invalid: [0] is 1",
        ),
        (
            Box::new(|r| r.valid = false),
            "`valid` is false but `status` is `ok`",
        ),
        (
            Box::new(|r| {
                r.valid = false;
                r.status = "invalid: x".into();
            }),
            "the row is not valid (`invalid: x`) but `time_min_s` is",
        ),
        (Box::new(|r| r.elements = 0), "`elements` is 0"),
        (
            Box::new(|r| r.intensity = Some(2.0)),
            "`intensity` is 2 but flops / bytes is",
        ),
        (
            Box::new(|r| r.theory_gflops = Some(-5.0)),
            "`theory_gflops` is -5",
        ),
    ];
    for (mutate, message) in cases {
        let mut r = good.clone();
        mutate(&mut r);
        let e = one_row_error(&r);
        assert!(e.starts_with("r.csv:2: stream/triad/f32: "), "{e}");
        assert!(e.contains(message), "`{message}` not in {e}");
        // and a calibration built in memory refuses the row too
        use roofprobe::analysis::calibration::FromRecords;
        assert!(roofprobe::Calibration::from_records(&[r], None).is_err());
    }
}

/// A GEMM row's working set is its A, B and C, plus whole copies of B where its launches
/// rotated through them; anything else is refused.
#[test]
fn a_gemm_working_set_is_its_matrices_and_whole_copies_of_b() {
    let shape = roofprobe::cases::gemm::Shape::new(1, 64, 32);
    let case = roofprobe::cases::gemm::case("simd", Precision::F32, shape);
    let weight = roofprobe::cases::gemm::weight_bytes(Precision::F32, shape);
    let good = measured(&case, 1e-3, true);
    check_row(&good).unwrap();
    let mut rotated = good.clone();
    rotated.working_set_bytes += 29 * weight;
    check_row(&rotated).unwrap();
    for bad in [good.working_set_bytes - 4, rotated.working_set_bytes + 4] {
        let mut r = good.clone();
        r.working_set_bytes = bad;
        let e = one_row_error(&r);
        assert!(
            e.contains(&format!(
                "`working_set_bytes` is {bad} but a f32 GEMM of 1x64x32"
            )) && e.contains("whole copies of B"),
            "{e}"
        );
    }
}

#[test]
fn control_characters_in_fields_are_refused() {
    let case = StreamKernel::Copy.case(Precision::F32, 10);
    for bad in ["a\0b", "\x1b[31mred", "ok\nerror: forged", "\u{202e}x"] {
        let mut r = measured(&case, 1e-3, true);
        r.device_name = bad.to_string();
        let e = one_row_error(&r);
        assert!(
            e.starts_with("r.csv:2: column `device_name` holds the control character U+")
                || e.starts_with("r.csv:2:") && e.contains("control character"),
            "{e}"
        );
    }
    // what a run writes is printable and spreadsheet-safe, whatever the driver said
    let mut id = identity();
    id.device.name = "=HYPERLINK(\"x\")\n".into();
    let r = Record::new(
        &id,
        "2026-01-01T00:00:00Z".into(),
        &case,
        Outcome::Failed {
            error: "line one\nerror: line two",
        },
        &Conditions {
            clock_mhz: Some(0.0),
            ..Conditions::default()
        },
        String::new(),
    );
    assert_eq!(r.device_name, "'=HYPERLINK(\"x\")\\u{a}");
    assert_eq!(r.status, "error: line one\\u{a}error: line two");
    assert_eq!(r.clock_mhz, None, "0 MHz is no clock");
    check_row(&r).unwrap();
}

/// A file of rows cut down to schema 1, as a run before schema 2 wrote it.
fn as_schema_1(records: &[Record]) -> Vec<u8> {
    let rows: Vec<Record> = records
        .iter()
        .map(|r| Record {
            schema: SCHEMA_1.into(),
            ..r.without_added_in_2()
        })
        .collect();
    let bytes = to_csv_bytes(&rows);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(bytes.as_slice());
    let all: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    let keep: Vec<usize> = (0..all[0].len())
        .filter(|&i| !ADDED_IN_2.contains(&&all[0][i]))
        .collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in &all {
        w.write_record(keep.iter().map(|&i| &r[i])).unwrap();
    }
    w.into_inner().unwrap()
}

/// `cat old.csv new.csv old.csv`: files of both schemas concatenate, each header read as the
/// layout of the rows under it.
#[test]
fn schema_1_and_2_files_concatenate_in_either_order() {
    let case = StreamKernel::Triad.case(Precision::F32, 1000);
    let new = measured(&case, 1e-3, true);
    let mut old = measured(&case, 2e-3, true);
    old.run_id = "box-host-20251231T000000Z".into();
    let (a, b) = (
        to_csv_bytes(std::slice::from_ref(&new)),
        as_schema_1(std::slice::from_ref(&old)),
    );
    assert!(String::from_utf8_lossy(&b).starts_with(&header_1().join(",")));
    for joined in [
        [a.as_slice(), &b].concat(),
        [b.as_slice(), &a, &b].concat(),
        [b"\xEF\xBB\xBF".as_slice(), &b, &b, &a, &a].concat(),
    ] {
        let rows = parse_csv(Path::new("ab.csv"), &joined).unwrap();
        assert!(rows.iter().any(|r| r.schema == SCHEMA_1));
        for r in &rows {
            if r.schema == SCHEMA {
                assert_eq!(*r, new);
            } else {
                assert_eq!(r.run_id, old.run_id);
                assert_eq!(r.stopped_by, "");
                assert_eq!(r.isa, "");
            }
        }
    }
    // the rows under a schema-1 header are read by it: one of schema 2's width is damage
    let wide = [
        b.as_slice(),
        &a[a.iter().position(|&c| c == b'\n').unwrap() + 1..],
    ]
    .concat();
    let e = parse_csv(Path::new("w.csv"), &wide)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!(
            "w.csv:3: row has {} fields, expected {}",
            header().len(),
            header_1().len()
        )),
        "{e}"
    );
}

/// Two machines of one name (two VMs both "AMD EPYC" on host "vm") under one run id: the
/// identity columns tell them apart, and the reader refuses to take them for one device.
#[test]
fn identity_columns_count_as_device_columns() {
    let case = StreamKernel::Copy.case(Precision::F32, 10);
    let a = measured(&case, 1e-3, true);
    for (column, change) in [
        // other than whatever this machine is (a fixed "AVX2+FMA" was no change on a Zen 3)
        (
            "isa",
            Box::new(|r: &mut Record| r.isa = format!("{}, other", r.isa))
                as Box<dyn Fn(&mut Record)>,
        ),
        (
            "microarch",
            Box::new(|r: &mut Record| r.microarch = format!("{}, other", r.microarch)),
        ),
        (
            "uuid",
            Box::new(|r: &mut Record| r.uuid = "GPU-5a1c2b3d".into()),
        ),
        (
            "power_limit_w",
            Box::new(|r: &mut Record| r.power_limit_w = Some(700.0)),
        ),
    ] {
        let mut b = measured(&case, 2e-3, true);
        change(&mut b);
        let joined = [to_csv_bytes(std::slice::from_ref(&a)), to_csv_bytes(&[b])].concat();
        let e = parse_csv(Path::new("ab.csv"), &joined)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "ab.csv:4: run `box-host-20260101T000000Z` mixes devices: `{column}` is"
            )),
            "{e}"
        );
    }
}

/// What schema 2 added is checked like every other column: numbers finite and in range,
/// `stopped_by` and `flags` as a run writes them, no flag on an invalid row, nothing of
/// schema 2 in a row that says schema 1.
#[test]
fn the_columns_of_schema_2_are_checked() {
    let case = StreamKernel::Triad.case(Precision::F32, 1000);
    let mut good = measured(&case, 1e-3, true);
    good.flags = "high_cv(12.3%);busy_host(1.02 CPUs)".into();
    good.other_cpus_busy = Some(1.02);
    good.power_limit_w = Some(700.0);
    good.app_clock_mhz = Some(1980.0);
    good.parallel_devices = Some(8);
    check_row(&good).unwrap();
    assert_eq!(
        parse_csv(Path::new("r.csv"), &to_csv_bytes(&[good.clone()])).unwrap(),
        [good.clone()]
    );
    type Mutation = Box<dyn Fn(&mut Record)>;
    let cases: Vec<(Mutation, &str)> = vec![
        (
            Box::new(|r| r.power_limit_w = Some(-700.0)),
            "`power_limit_w` is -700",
        ),
        (
            Box::new(|r| r.power_limit_w = Some(0.0)),
            "`power_limit_w` is 0",
        ),
        (
            Box::new(|r| r.app_clock_mhz = Some(f64::NAN)),
            "`app_clock_mhz` is NaN",
        ),
        (
            Box::new(|r| r.app_memory_clock_mhz = Some(1e9)),
            "`app_memory_clock_mhz` is 1000000000",
        ),
        (
            Box::new(|r| r.other_cpus_busy = Some(-0.5)),
            "`other_cpus_busy` is -0.5",
        ),
        (
            Box::new(|r| r.other_cpus_busy = Some(f64::INFINITY)),
            "`other_cpus_busy` is inf",
        ),
        (
            Box::new(|r| r.stopped_by = "forever".into()),
            "`stopped_by` is `forever`",
        ),
        (
            Box::new(|r| r.stopped_by.clear()),
            "with an empty `stopped_by`",
        ),
        (
            Box::new(|r| r.flags = "=HYPERLINK(\"x\")".into()),
            "`flags` holds `=HYPERLINK",
        ),
        (
            Box::new(|r| r.flags = "fast(1%)".into()),
            "`flags` holds `fast(1%)`",
        ),
        (
            Box::new(|r| r.isa = "AVX\u{1b}[2J".into()),
            "`isa` holds the control character U+001B",
        ),
        (
            Box::new(|r| r.uuid = "GPU-\u{202e}1".into()),
            "`uuid` holds the control character U+202E",
        ),
        (
            Box::new(|r| {
                invalidate(r);
                r.flags = "high_cv(12.3%)".into();
            }),
            "an invalid row has no figure to flag",
        ),
        (
            Box::new(|r| r.schema = SCHEMA_1.into()),
            "a row of roofprobe-csv/1 holds `vendor`, a column roofprobe-csv/2 added",
        ),
        (
            Box::new(|r| r.parallel_devices = Some(0)),
            "`parallel_devices` is 0",
        ),
        (
            Box::new(|r| {
                *r = r.without_added_in_2();
                r.schema = SCHEMA_1.into();
                r.parallel_devices = Some(2);
            }),
            "a row of roofprobe-csv/1 holds `parallel_devices`",
        ),
    ];
    for (mutate, message) in cases {
        let mut r = good.clone();
        mutate(&mut r);
        let e = check_row(&r).unwrap_err();
        assert!(e.contains(message), "`{message}` not in {e}");
    }
    // a schema-1 row with only schema 1's columns passes; an invalid one keeps its reason
    let mut old = good.without_added_in_2();
    old.schema = SCHEMA_1.into();
    check_row(&old).unwrap();
    let mut failed = old.clone();
    invalidate(&mut failed);
    check_row(&failed).unwrap();
}

/// Marks a row invalid as a run does: the reason in `status`, no figures, no flags.
fn invalidate(r: &mut Record) {
    roofprobe::analysis::fixtures::invalidate(r, "[0] is 1, should be 2");
    r.flags.clear();
}

#[test]
fn concatenated_files_read_as_one_and_mixed_devices_are_named() {
    let case = StreamKernel::Copy.case(Precision::F32, 10);
    let a = to_csv_bytes(&[measured(&case, 1e-3, true)]);
    let mut other = measured(&case, 2e-3, true);
    other.run_id = "box-host-20260102T000000Z-00000001".into();
    let b = to_csv_bytes(&[other.clone()]);
    // `cat a.csv b.csv`, with a byte-order mark in front for good measure
    let joined = [b"\xEF\xBB\xBF".as_slice(), &a, &b].concat();
    let rows = parse_csv(Path::new("ab.csv"), &joined).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].run_id, other.run_id);
    // one run id, two devices: refused, naming the run, the column and both lines
    let mut imposter = measured(&case, 2e-3, true);
    imposter.device_name = "NVIDIA H200".into();
    let c = to_csv_bytes(&[imposter]);
    let joined = [a.as_slice(), &b, &c].concat();
    let e = parse_csv(Path::new("abc.csv"), &joined)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("abc.csv:6: run `box-host-20260101T000000Z` mixes devices: `device_name` is `NVIDIA H200` here but")
            && e.contains("on line 2"),
        "{e}"
    );
    // a header of another layout in the middle is a row that does not parse
    let foreign = [a.as_slice(), b"schema,x\nroofprobe-csv/1,y\n"].concat();
    assert!(parse_csv(Path::new("f.csv"), &foreign).is_err());
}
