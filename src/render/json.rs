//! The calibration JSON exporter: a calibration in, the file's bytes out. The schema itself is
//! [`crate::analysis::calibration`]'s; this is the one place files get their form (pretty, final newline).

use crate::analysis::calibration::Calibration;

/// The bytes of a calibration file.
pub fn render(calibration: &Calibration) -> Vec<u8> {
    calibration.to_json().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::calibration::FromRecords;
    use crate::analysis::fixtures::synthetic_run;

    #[test]
    fn calibration_json_snapshot() {
        let cal = Calibration::from_records(&synthetic_run(), None).unwrap();
        let text = String::from_utf8(render(&cal)).unwrap();
        assert!(text.ends_with("}\n"));
        // the version travels with every file
        assert!(text.starts_with("{\n  \"schema\": \"roofprobe-calibration/1\",\n"));
        // generator carries the crate version, which changes on release: pin the rest
        let pinned = text.replace(env!("CARGO_PKG_VERSION"), "<version>");
        insta::assert_snapshot!("calibration_json", pinned);
    }
}
