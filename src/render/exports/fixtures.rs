//! What the export tests share (here and in tests/): the synthetic A100 run's export in any
//! format, a field of it by key, a figure compared to 1e-12, and the run with a measured
//! capacity. Test support, hidden from the docs; nothing else calls it.

use super::*;
use crate::analysis::calibration::FromRecords;
use crate::analysis::fixtures::synthetic_run;

/// The synthetic A100 80GB SXM4 run: DRAM 1500 GB/s and f16.f32 tensor 250 TFLOP/s
/// measured; everything else from the sheet (2039 GB/s, 80 GB, BF16 312, INT8 624,
/// NVLink 600, PCIe Gen4 x16 (64 GB/s), 400 W).
pub fn a100(format: Format, sets: &[(String, Value)]) -> Export {
    let cal = Calibration::from_records(&synthetic_run(), None).unwrap();
    let sheet = sheet_of(&cal).unwrap();
    assert_eq!(sheet.unwrap().device, "A100 80GB SXM4");
    build(&cal, sheet, format, sets).unwrap()
}

/// The field of `e` named `key`; a test failure where there is none.
pub fn field<'a>(e: &'a Export, key: &str) -> &'a Field {
    e.fields
        .iter()
        .find(|f| f.key == key)
        .unwrap_or_else(|| panic!("no {key} in {:?}", e.fields))
}

/// `v` is a number within 1e-12 (relative) of `want`.
pub fn close(v: &Value, want: f64) {
    let got = v
        .as_f64()
        .unwrap_or_else(|| panic!("{v:?} is not a number"));
    assert!((got - want).abs() <= want.abs() * 1e-12, "{got} != {want}");
}

/// The synthetic A100 run with a measured capacity.
pub fn with_capacity(total: u64, free: u64) -> Calibration {
    let mut cal = Calibration::from_records(&synthetic_run(), None).unwrap();
    cal.capacity = Some(roofprobe_calibration::Capacity {
        total_bytes: total,
        free_bytes: free,
        context_bytes: None,
        largest_allocation_bytes: None,
    });
    cal
}
