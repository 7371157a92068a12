//! Test data builders: a run's identity and a measured row, built as the runner builds them
//! (through [`Record::new`]) with no measurement behind them, for the tests of the record and
//! of every layer that reads rows (the library's own tests and the suite's in tests/ take them
//! from here, one copy).
//!
//! Compiled always so that tests/ can use them, hidden from the docs; no code outside the
//! tests uses them.

use crate::cases::{Case, Verdict};
use crate::device::Conditions;
use crate::results::record::{Outcome, Record, RunIdentity};
use crate::stats::{Stopped, Summary};

/// The identity of a run on this host (its device as the host backend describes it), under a
/// fixed run id and host name.
pub fn identity() -> RunIdentity {
    RunIdentity {
        run_id: "box-host-20260101T000000Z".into(),
        host: "box".into(),
        device: crate::backend::host::host_info(),
        parallel_devices: None,
    }
}

/// A valid (or, with `valid` false, an invalid) row of `case` whose samples centre on
/// `median` seconds (±10 %), measured under default conditions.
pub fn measured(case: &Case, median: f64, valid: bool) -> Record {
    let summary = Summary::from_secs(&[median * 0.9, median, median * 1.1]).unwrap();
    let verdict = if valid {
        Verdict::valid()
    } else {
        Verdict::invalid("[3] is 1, should be 2, diff -1")
    };
    Record::new(
        &identity(),
        "2026-01-01T00:00:00Z".into(),
        case,
        Outcome::Measured {
            summary: &summary,
            reps: 4,
            stopped: Stopped::Count,
            verdict: &verdict,
        },
        &Conditions::default(),
        String::new(),
    )
}
