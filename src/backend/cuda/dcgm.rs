//! A DCGM host engine's profiling fields, for `roofprobe watch` on a GPU without NVML's GPM
//! metrics (before Hopper), read through DCGM's own client: `dcgmi dmon -i GPU -e FIELDS -d MS`
//! streams one row per interval, which a thread of ours reads as it comes.
//!
//! Through the client rather than `libdcgm`: the host engine is where the counters are (a
//! process that is not running is no signal at all, and `dcgmi` says so in its own words), the
//! client's rows are a documented format (a `#Entity` header naming each field, an `ID` line,
//! then `GPU <id>` and the values, `N/A` where there is none, the header again every 14 rows),
//! and no struct layout of DCGM's versioned C API has to be trusted blind. `ROOFPROBE_DCGMI`
//! names another client (the tests' stand-in).
//!
//! It must not print: what went wrong comes back as the client's last words.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The fields asked for, in order: DCGM's field id and what it is. 1002–1008 are fractions of
/// time (of cycles), 1009 and 1010 bytes per second.
pub const FIELDS: [(u16, &str); 9] = [
    (1002, "SM active"),
    (1003, "SM occupancy"),
    (1004, "tensor active"),
    (1005, "DRAM active"),
    (1006, "FP64 active"),
    (1007, "FP32 active"),
    (1008, "FP16 active"),
    (1009, "PCIe TX bytes"),
    (1010, "PCIe RX bytes"),
];

/// One row's values, in [`FIELDS`]' order; `None` where the client printed `N/A`.
pub type Values = [Option<f64>; 9];

/// The client's name: `ROOFPROBE_DCGMI`, else `dcgmi` on the `PATH`.
pub fn client() -> String {
    std::env::var("ROOFPROBE_DCGMI").unwrap_or_else(|_| "dcgmi".to_string())
}

/// The values of GPU `gpu` in one line of the client's output, or `None` for any other line
/// (a header, another entity, a message).
pub fn parse_row(line: &str, gpu: u32) -> Option<Values> {
    let mut words = line.split_whitespace();
    if words.next()? != "GPU" || words.next()?.parse::<u32>().ok()? != gpu {
        return None;
    }
    let mut values: Values = [None; 9];
    let mut seen = 0;
    for (slot, word) in values.iter_mut().zip(words) {
        *slot = match word {
            "N/A" => None,
            w => Some(
                w.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)?,
            ),
        };
        seen += 1;
    }
    (seen == FIELDS.len()).then_some(values)
}

#[derive(Default)]
struct Latest {
    values: Option<Values>,
    /// Whether the client has ended, and its last line.
    ended: bool,
    last_words: String,
}

/// A running `dcgmi dmon` for one GPU, and the latest row it gave.
pub struct Dmon {
    child: Child,
    latest: Arc<Mutex<Latest>>,
}

fn lock(m: &Mutex<Latest>) -> std::sync::MutexGuard<'_, Latest> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Dmon {
    /// Starts the client for DCGM's GPU `gpu` (NVML's index) at `period`, and waits (at most
    /// three periods, and two seconds at least) for its first row. `Err`: why there is no DCGM
    /// signal, in a few words.
    pub fn start(gpu: u32, period: Duration) -> Result<Dmon, String> {
        Self::start_with(&client(), gpu, period)
    }

    /// [`Dmon::start`] with the client `program`.
    pub fn start_with(program: &str, gpu: u32, period: Duration) -> Result<Dmon, String> {
        let fields: Vec<String> = FIELDS.iter().map(|(id, _)| id.to_string()).collect();
        let ms = period.as_millis().clamp(100, 60_000);
        let mut child = Command::new(program)
            .args([
                "dmon",
                "-i",
                &gpu.to_string(),
                "-e",
                &fields.join(","),
                "-d",
            ])
            .arg(ms.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    format!("no `{program}` found (DCGM is not installed, or not on the PATH)")
                }
                _ => format!("`{program}` could not start: {e}"),
            })?;
        let latest = Arc::new(Mutex::new(Latest::default()));
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        if let Some(out) = stdout {
            let latest = latest.clone();
            let _ = std::thread::Builder::new()
                .name("dcgmi".into())
                .spawn(move || {
                    for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
                        let mut l = lock(&latest);
                        match parse_row(&line, gpu) {
                            Some(v) => l.values = Some(v),
                            None if !line.trim().is_empty()
                                && !line.starts_with("#Entity")
                                && !line.starts_with("ID") =>
                            {
                                l.last_words = line.trim().to_string()
                            }
                            None => {}
                        }
                    }
                    lock(&latest).ended = true;
                });
        }
        if let Some(mut err) = stderr {
            let latest = latest.clone();
            let _ = std::thread::Builder::new()
                .name("dcgmi-err".into())
                .spawn(move || {
                    let mut text = String::new();
                    let _ = err.read_to_string(&mut text);
                    if let Some(line) = text.lines().rev().find(|l| !l.trim().is_empty()) {
                        lock(&latest).last_words = line.trim().to_string();
                    }
                });
        }
        let dmon = Dmon { child, latest };
        let wait = (period * 3).max(Duration::from_secs(2));
        let start = Instant::now();
        loop {
            {
                let l = lock(&dmon.latest);
                if l.values.is_some() {
                    break;
                }
                if l.ended || start.elapsed() > wait {
                    let words = if l.last_words.is_empty() {
                        "no row for this GPU".to_string()
                    } else {
                        crate::text::one_line(&l.last_words).into_owned()
                    };
                    return Err(format!("`{program} dmon` gave no values: {words}"));
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(dmon)
    }

    /// The latest row; `Err` with the client's last words once it has ended.
    pub fn latest(&self) -> Result<Values, String> {
        let l = lock(&self.latest);
        match (l.ended, l.values) {
            (false, Some(v)) => Ok(v),
            _ => Err(format!(
                "`{} dmon` ended: {}",
                client(),
                if l.last_words.is_empty() {
                    "(it said nothing)"
                } else {
                    &l.last_words
                }
            )),
        }
    }
}

impl Drop for Dmon {
    fn drop(&mut self) {
        // our own child, by its handle
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client's rows as DCGM's `DeviceMonitor` prints them: the entity, then each field's
    /// value in the order asked, `N/A` where there is none; other entities, headers and
    /// messages are no row of ours.
    #[test]
    fn rows_are_read_by_position_and_others_skipped() {
        let row =
            "GPU 1     0.950    0.412    0.050    0.800    0.000    0.100    N/A      12345    678";
        let v = parse_row(row, 1).unwrap();
        assert_eq!(v[0], Some(0.95));
        assert_eq!(v[3], Some(0.8));
        assert_eq!(v[6], None);
        assert_eq!(v[8], Some(678.0));
        assert_eq!(parse_row(row, 0), None);
        assert_eq!(parse_row("#Entity   SMACT  SMOCC", 1), None);
        assert_eq!(parse_row("ID", 1), None);
        assert_eq!(parse_row("GPU 1  0.1 0.2", 1), None, "too few values");
        assert_eq!(
            parse_row("GPU 1 x 0 0 0 0 0 0 0 0", 1),
            None,
            "not a number"
        );
    }

    #[test]
    fn a_missing_client_says_so() {
        let err = Dmon::start_with("/nonexistent/dcgmi", 0, Duration::from_millis(100))
            .err()
            .unwrap();
        assert!(err.contains("not installed"), "{err}");
    }
}
