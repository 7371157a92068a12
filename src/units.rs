//! Units and their words: sizes in binary units, durations in seconds and minutes, percentages,
//! and names fit for a file. What every layer parses or prints alike lives here, at the bottom,
//! so no layer reaches up to another's helper for it.

/// Bytes in binary units.
pub fn bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// `3 min 20 s`, `45 s`.
pub fn human(secs: f64) -> String {
    let s = secs.round().max(0.0) as u64;
    match (s / 60, s % 60) {
        (0, s) => format!("{s} s"),
        (m, 0) => format!("{m} min"),
        (m, s) => format!("{m} min {s} s"),
    }
}

/// Parses a duration in seconds, `15` or `15s`, `0.5s`; it must be above 0.
pub fn parse_seconds(s: &str) -> Result<f64, String> {
    let number = s.trim().trim_end_matches('s').trim();
    match number.parse::<f64>() {
        // (a limit past a week is no limit, and past 2^64 s no `Duration` holds it)
        Ok(secs) if secs > MAX_SECONDS => Err(format!(
            "`{s}` seconds is more than a week ({MAX_SECONDS} s); give a time up to that"
        )),
        Ok(secs) if secs.is_finite() && secs > 0.0 => Ok(secs),
        _ => Err(format!(
            "`{s}` is not a time above 0 in seconds; write e.g. 15 or 2.5s"
        )),
    }
}

/// The longest time [`parse_seconds`] takes: a week.
pub const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// Parses a percentage, `5%` or `5`, `0.5%`, into a fraction (0.05); it must be above 0.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let number = s.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(p) if p.is_finite() && p > 0.0 => Ok(p / 100.0),
        Ok(_) => Err(format!("`{s}` must be a percentage above 0")),
        Err(_) => Err(format!("`{s}` is not a percentage; write e.g. 5% or 0.5%")),
    }
}

/// Lower-case letters, digits and single dashes: a name fit for a file name.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// Eight hex digits of a stable hash (FNV-1a, the same on every machine and release) of `s`:
/// what tells apart two names whose slugs coincide.
pub fn short_hash(s: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("15"), Ok(15.0));
        assert_eq!(parse_seconds("2.5s"), Ok(2.5));
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("soon").is_err());
        // a week at most (1e300 s once panicked in the worker, making its deadline)
        assert_eq!(parse_seconds("604800"), Ok(604800.0));
        assert!(parse_seconds("1e300")
            .unwrap_err()
            .contains("more than a week"));
        assert!(parse_seconds("inf").is_err());
    }

    #[test]
    fn percentages() {
        assert_eq!(parse_percent("5%"), Ok(0.05));
        assert_eq!(parse_percent("5"), Ok(0.05));
        assert_eq!(parse_percent(" 0.5 %"), Ok(0.005));
        assert!(parse_percent("0").is_err());
        assert!(parse_percent("-3%").is_err());
        assert!(parse_percent("NaN").is_err());
        assert!(parse_percent("lots")
            .unwrap_err()
            .contains("not a percentage"));
    }

    #[test]
    fn durations() {
        assert_eq!(human(200.4), "3 min 20 s");
        assert_eq!(human(45.0), "45 s");
        assert_eq!(human(120.0), "2 min");
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("NVIDIA H200"), "nvidia-h200");
        assert_eq!(
            slug("  AMD EPYC 9B45 96-Core Processor "),
            "amd-epyc-9b45-96-core-processor"
        );
        assert_eq!(slug("A100-SXM4-80GB"), "a100-sxm4-80gb");
        assert_eq!(slug("ünïcode/..//x"), "n-code-x");
    }

    #[test]
    fn sizes() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(256 << 20), "256.0 MiB");
    }
}
