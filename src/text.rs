//! Text from outside (drivers, the OS, files) made safe for where it goes: a terminal, an SVG, a
//! spreadsheet. Readers already refuse control characters in what they read; these are the last
//! guard at the outputs, so nothing can forge a line, move a terminal's cursor, break the XML or
//! run as a spreadsheet formula.
//!
//! This module must not decide what is printed, only how safely.

/// Writes `text` to stderr, ignoring a failure: a message that cannot be shown (stderr on a full
/// disk, a closed pipe) must never cost the run, as `eprintln!`'s panic did. Every message of
/// the program goes through here, by [`say!`](crate::say) and [`say_inline!`](crate::say_inline).
///
/// Every line is made [`printable`] first (newlines kept): what a driver, NVML, /proc or a file
/// put into a message (a device name with an escape sequence) never reaches the terminal raw,
/// whichever message carries it.
pub fn to_stderr(text: &str) {
    use std::io::Write;
    let text = printable(text, true);
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// `eprintln!` that ignores a failing stderr ([`to_stderr`]).
#[macro_export]
macro_rules! say {
    () => {
        $crate::text::to_stderr("\n")
    };
    ($($arg:tt)*) => {
        $crate::text::to_stderr(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that ignores a failing stderr ([`to_stderr`]).
#[macro_export]
macro_rules! say_inline {
    ($($arg:tt)*) => {
        $crate::text::to_stderr(&format!($($arg)*))
    };
}

use roofprobe_calibration::check::is_forbidden_char;
use std::borrow::Cow;

/// `text` with every forbidden character (control characters, bidirectional overrides, XML
/// non-characters; see [`is_forbidden_char`]) written out as `\u{1b}`; newlines are kept only
/// when `keep_newlines`.
pub fn printable(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    let bad = |c: char| is_forbidden_char(c) && !(keep_newlines && c == '\n');
    if !text.chars().any(bad) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if bad(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// JSON text (as serde_json writes it) made printable without breaking it: serde_json escapes
/// C0 controls but writes DEL, C1 controls and bidirectional overrides as they are, and these
/// can only be inside strings, where `\uXXXX` stands for the same character. (The `\u{1b}` of
/// [`printable`] is no JSON escape.)
pub fn printable_json(json: &str) -> Cow<'_, str> {
    let bad = |c: char| is_forbidden_char(c) && c != '\n';
    if !json.chars().any(bad) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if bad(c) {
            // every forbidden character is in the Basic Multilingual Plane: one escape each
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// One line of printable text.
pub fn one_line(text: &str) -> Cow<'_, str> {
    printable(text, false)
}

/// `text` cut to at most `max_chars` characters, the cut marked with `…`: for a picture, where
/// every label is measured at every spot tried, a name from a file may be any length (a reader
/// takes a 70 000-character case id) and would never fit anyway. Tables and files keep it whole.
pub fn clipped(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some(_) => {
            let keep = max_chars.saturating_sub(1);
            let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
            Cow::Owned(format!("{}…", &text[..end]))
        }
    }
}

/// A text field for a CSV that a spreadsheet may open: a field that starts like a formula (`=`,
/// `+`, `-`, `@`, tab, carriage return) gets a leading `'`, which spreadsheets show as text.
pub fn spreadsheet_safe(text: &str) -> Cow<'_, str> {
    match text.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => Cow::Owned(format!("'{text}")),
        _ => Cow::Borrowed(text),
    }
}

/// A text field as the run's CSV stores it: printable and spreadsheet-safe.
pub fn field(text: &str) -> String {
    spreadsheet_safe(&one_line(text)).into_owned()
}

/// `a, b, c` or `a, b, c … and 47 more`: a list of names that stays one readable line.
pub fn some_of(names: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut s = names
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" … and {} more", names.len() - SHOWN));
    }
    s
}

/// A run's letter: A, B, …, Z, then AA, AB, ….
pub fn letter(i: usize) -> String {
    let mut n = i;
    let mut s = String::new();
    loop {
        s.insert(0, (b'A' + (n % 26) as u8) as char);
        if n < 26 {
            break;
        }
        n = n / 26 - 1;
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn clipped_cuts_long_text_only() {
        assert_eq!(super::clipped("stream/copy/f32", 15), "stream/copy/f32");
        assert_eq!(super::clipped("stream/copy/f32", 7), "stream…");
        assert_eq!(super::clipped("ééééé", 3), "éé…");
        assert_eq!(super::clipped(&"k".repeat(70_000), 96).chars().count(), 96);
    }

    use super::*;

    #[test]
    fn control_characters_are_written_out() {
        assert_eq!(printable("ok", false), "ok");
        assert!(matches!(printable("ok", false), Cow::Borrowed(_)));
        assert_eq!(one_line("a\nerror: forged"), "a\\u{a}error: forged");
        assert_eq!(printable("a\nb\x1b[2J", true), "a\nb\\u{1b}[2J");
        assert_eq!(one_line("\0\u{202e}x"), "\\u{0}\\u{202e}x");
        assert_eq!(one_line("µs ×4"), "µs ×4");
    }

    #[test]
    fn json_stays_json_and_printable() {
        let value = serde_json::json!({ "name": "a\u{7f}b\u{9b}c\u{202e}d\u{1b}e\nf" });
        let text = serde_json::to_string_pretty(&value).unwrap();
        let safe = printable_json(&text);
        assert!(
            !safe.chars().any(|c| is_forbidden_char(c) && c != '\n'),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
        assert!(matches!(
            printable_json("{\n  \"a\": 1\n}"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn formulas_become_text() {
        assert_eq!(spreadsheet_safe("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
        assert_eq!(spreadsheet_safe("+1"), "'+1");
        assert_eq!(spreadsheet_safe("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(spreadsheet_safe("-2+3"), "'-2+3");
        assert_eq!(spreadsheet_safe("NVIDIA H200"), "NVIDIA H200");
        assert_eq!(spreadsheet_safe(""), "");
        assert_eq!(field("=1\n"), "'=1\\u{a}");
    }
}
