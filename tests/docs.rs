//! The documentation held to what it documents, so it cannot drift (README.md, docs/*.md and
//! results/README.md):
//!
//! - docs/cli.md ends with every command's `--help` text as clap prints it, built here from
//!   [`roofprobe::cli::Cli`] itself; `ROOFPROBE_BLESS=1 cargo test --test suite docs::` rewrites
//!   that part of the file from clap (the hand-written part above its marker is kept);
//! - every relative link resolves: to a file or folder that exists, and a `#anchor` to a
//!   heading of the page it names (GitHub's anchors);
//! - every repository path named in inline code (`src/…`, `tests/…`, `scripts/…`, …) exists;
//! - every `roofprobe …` command line in a fenced code block (also as `cargo run --release --
//!   …`, `./target/release/roofprobe …` or `scripts/sim-cuda …`) parses with clap
//!   (`Cli::try_parse_from`).
//!
//! Each check is a function from a page's text to its problems, and each has a test that plants
//! a bad link, path, command or help text and sees it caught.

use clap::{CommandFactory, Parser};
use roofprobe::cli::Cli;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The line of docs/cli.md after which the file is clap's help text, generated.
const GENERATED_MARKER: &str =
    "<!-- Generated from clap's own help text: do not edit below this line. \
                                ROOFPROBE_BLESS=1 cargo test --test suite docs:: rewrites it. -->";

/// The top-level folders of the repository whose paths the docs may name in inline code.
const REPO_FOLDERS: &[&str] = &[
    "src/",
    "tests/",
    "scripts/",
    "kernels/",
    "benches/",
    "deploy/",
    ".ci/",
    "data/",
    "docs/",
    "simcuda/",
    "ptxsim/",
    "calibration/",
    "results/",
];

fn top() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The pages checked: the README, every page of docs/ and results/README.md.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![top().join("README.md"), top().join("results/README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(top().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn shown(path: &Path) -> String {
    path.strip_prefix(top())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The README a newcomer reads in five minutes (at most 250 lines) and docs/ one page per topic
/// of about 400 lines (at most 420), so that neither grows back into a manual unnoticed.
#[test]
fn the_readme_and_every_docs_page_stay_short() {
    let mut long = Vec::new();
    for page in pages() {
        let most = match shown(&page).as_str() {
            "README.md" => 250,
            "results/README.md" => continue, // the runs' record, not reading for a newcomer
            _ => 420,
        };
        let lines = read(&page).lines().count();
        if lines > most {
            long.push(format!("{}: {lines} lines, at most {most}", shown(&page)));
        }
    }
    assert!(
        long.is_empty(),
        "pages too long (split the topic, or move run commentary to results/README.md):\n  {}",
        long.join("\n  ")
    );
}

// ---------------------------------------------------------------------------------------------
// docs/cli.md: clap's help text

/// Every command's `--help` text as clap prints it: what `roofprobe [COMMAND] --help` prints,
/// built in process (clap's `wrap_help` is off, so the terminal's width does not matter), each
/// under a heading of its command line: the top level, then each command in clap's order,
/// hidden ones left out.
fn help_texts() -> String {
    let mut out = String::new();
    let mut names = vec![None];
    names.extend(
        Cli::command()
            .get_subcommands()
            .filter(|sub| !sub.is_hide_set())
            .map(|sub| Some(sub.get_name().to_string())),
    );
    for name in names {
        let args: Vec<&str> = std::iter::once("roofprobe")
            .chain(name.as_deref())
            .chain(["--help"])
            .collect();
        let help = match Cli::command().try_get_matches_from(&args) {
            Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => e.to_string(),
            _ => panic!("{args:?} printed no help"),
        };
        out.push_str(&format!(
            "\n## `{}`\n\n```text\n{}\n```\n",
            args[..args.len() - 1].join(" "),
            help.trim_end()
        ));
    }
    out
}

/// docs/cli.md's generated part against `help`: `Ok` when they agree, else the first line
/// that differs. The file's hand-written part is what precedes the marker line.
fn check_cli_page(page: &str, help: &str) -> Result<(), String> {
    let Some((_, generated)) = page.split_once(GENERATED_MARKER) else {
        return Err(format!("no marker line `{GENERATED_MARKER}`"));
    };
    if generated == help {
        return Ok(());
    }
    let (mut got, mut want) = (generated.lines(), help.lines());
    for n in 1.. {
        match (got.next(), want.next()) {
            (Some(g), Some(w)) if g == w => continue,
            (g, w) => {
                return Err(format!(
                    "line {n} after the marker is {:?}, clap prints {:?}",
                    g.unwrap_or("(the end)"),
                    w.unwrap_or("(the end)")
                ))
            }
        }
    }
    unreachable!()
}

#[test]
fn docs_cli_md_is_clap_s_own_help_text() {
    let path = top().join("docs/cli.md");
    let page = read(&path);
    let help = help_texts();
    if let Err(why) = check_cli_page(&page, &help) {
        if std::env::var_os("ROOFPROBE_BLESS").is_some_and(|v| v == "1") {
            let (head, _) = page
                .split_once(GENERATED_MARKER)
                .unwrap_or((page.as_str(), ""));
            std::fs::write(&path, format!("{head}{GENERATED_MARKER}{help}")).unwrap();
            eprintln!("docs/cli.md rewritten from clap's help text ({why})");
        } else {
            panic!(
                "docs/cli.md differs from clap's help text: {why}; rewrite its generated part \
                 with `ROOFPROBE_BLESS=1 cargo test --test suite docs::` (docs/testing.md)"
            );
        }
    }
}

/// The help built here is the help the binary prints.
#[test]
fn the_help_built_here_is_what_the_binary_prints() {
    let help = help_texts();
    for args in [
        vec!["--help"],
        vec!["run", "--help"],
        vec!["export", "--help"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_roofprobe"))
            .args(&args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        let printed = String::from_utf8(out.stdout).unwrap();
        assert!(
            help.contains(&format!("```text\n{}\n```", printed.trim_end())),
            "roofprobe {args:?} prints what docs/cli.md would not hold:\n{printed}"
        );
    }
}

#[test]
fn a_stale_help_text_is_caught() {
    let help = help_texts();
    let page = format!("# The command line\n\n{GENERATED_MARKER}{help}");
    assert_eq!(check_cli_page(&page, &help), Ok(()));
    let stale = page.replacen("[default: auto]", "[default: host]", 1);
    assert_ne!(stale, page, "the planted change must change the page");
    let why = check_cli_page(&stale, &help).unwrap_err();
    assert!(why.contains("[default: host]"), "{why}");
    // a command left out (the page ends early) and a page without its marker
    let short = &page[..page.rfind("\n## ").unwrap()];
    assert!(check_cli_page(short, &help).is_err());
    assert!(check_cli_page(&help, &help).is_err());
}

// ---------------------------------------------------------------------------------------------
// Markdown, as far as these checks need it

/// A page's lines outside fenced code blocks, with their line numbers, and its fenced blocks'
/// lines apart.
struct Parsed<'a> {
    prose: Vec<(usize, &'a str)>,
    code: Vec<(usize, &'a str)>,
}

fn parse(text: &str) -> Parsed<'_> {
    let (mut prose, mut code) = (Vec::new(), Vec::new());
    let mut fence: Option<&str> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let trimmed = line.trim_start();
        match fence {
            None if trimmed.starts_with("```") || trimmed.starts_with("~~~") => {
                fence = Some(&trimmed[..3]);
            }
            None => prose.push((n, line)),
            Some(f) if trimmed.starts_with(f) => fence = None,
            Some(_) => code.push((n, line)),
        }
    }
    Parsed { prose, code }
}

/// The inline code spans of a line of prose (single backticks; GitHub's double ones too).
fn code_spans(line: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let open = &rest[start..start + ticks];
        let after = &rest[start + ticks..];
        match after.find(open) {
            Some(end) => {
                spans.push(after[..end].trim());
                rest = &after[end + ticks..];
            }
            None => break,
        }
    }
    spans
}

/// A line of prose with its inline code spans blanked out (a link inside code is no link).
fn without_code(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces to
/// hyphens; a repeated heading gets `-1`, `-2`, …
fn anchors(text: &str) -> HashSet<String> {
    let mut seen: HashSet<String> = HashSet::new();
    for (_, line) in parse(text).prose {
        let Some(title) = line.strip_prefix('#') else {
            continue;
        };
        let title = title.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let slug: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut k = 1;
        while seen.contains(&unique) {
            unique = format!("{slug}-{k}");
            k += 1;
        }
        seen.insert(unique);
    }
    seen
}

/// The link targets of a line of prose: `[text](target)`, `![alt](target)`, `<img src="…">`
/// and reference definitions `[name]: target`.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code(line);
    let mut targets = Vec::new();
    let inline = regex::Regex::new(r#"\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)"#).unwrap();
    targets.extend(inline.captures_iter(&line).map(|c| c[1].to_string()));
    let img = regex::Regex::new(r#"<img[^>]*\ssrc="([^"]+)""#).unwrap();
    targets.extend(img.captures_iter(&line).map(|c| c[1].to_string()));
    let reference = regex::Regex::new(r"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(\s|$)").unwrap();
    targets.extend(reference.captures_iter(&line).map(|c| c[1].to_string()));
    targets
}

// ---------------------------------------------------------------------------------------------
// Links

/// The broken relative links of the page at `page` (whose text is `text`): a file or folder
/// that does not exist, or an anchor that is no heading of the page it points to.
fn broken_links(page: &Path, text: &str) -> Vec<String> {
    let dir = page.parent().unwrap();
    let mut broken = Vec::new();
    for (n, line) in parse(text).prose {
        for target in link_targets(line) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                page.to_path_buf()
            } else {
                dir.join(file)
            };
            if !file.is_empty() && !path.exists() {
                broken.push(format!("line {n}: {target}: no such file"));
                continue;
            }
            if let Some(anchor) = anchor {
                let is_page = path.extension().is_some_and(|e| e == "md");
                let known = if path == page {
                    anchors(text)
                } else if is_page {
                    anchors(&read(&path))
                } else {
                    HashSet::new()
                };
                if !known.contains(anchor) {
                    broken.push(format!(
                        "line {n}: {target}: no heading has the anchor #{anchor}"
                    ));
                }
            }
        }
    }
    broken
}

/// The repository paths named in the page's inline code (`src/run/runner.rs`, `scripts/`) that
/// do not exist. A run's stem (`results/<run id>`) names its files, so it counts where a file of
/// it exists. Patterns (`results/<stem>.csv`, `results/*.svg`) and paths elided with `…` are no
/// single path and are left alone.
fn missing_paths(root: &Path, text: &str) -> Vec<String> {
    let mut missing = Vec::new();
    for (n, line) in parse(text).prose {
        for span in code_spans(line) {
            let Some(word) = span.split_whitespace().next() else {
                continue;
            };
            let word = word.trim_end_matches([',', ';', ':', ')']);
            if !REPO_FOLDERS.iter().any(|f| word.starts_with(f))
                || word.contains(['<', '*', '…', '{', '$', '['])
            {
                continue;
            }
            if !root.join(word).exists() && !is_stem(&root.join(word)) {
                missing.push(format!("line {n}: `{word}` does not exist"));
            }
        }
    }
    missing
}

/// Whether `path` is the stem of files beside it (`results/<run id>` of `<run id>.csv`, …).
fn is_stem(path: &Path) -> bool {
    let (Some(dir), Some(stem)) = (path.parent(), path.file_name()) else {
        return false;
    };
    let prefix = format!("{}.", stem.to_string_lossy());
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(&prefix))
    })
}

#[test]
fn every_relative_link_and_path_in_the_docs_resolves() {
    let mut problems = Vec::new();
    for page in pages() {
        let text = read(&page);
        for p in broken_links(&page, &text)
            .into_iter()
            .chain(missing_paths(top(), &text))
        {
            problems.push(format!("{}: {p}", shown(&page)));
        }
    }
    assert!(
        problems.is_empty(),
        "links or paths in the docs that lead nowhere:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn a_broken_link_or_a_missing_path_is_caught() {
    let page = top().join("docs/planted.md");
    let good = "# A page\n\n## Its `second` heading\n\n[readme](../README.md), \
                [the measurements](measurements.md#which-cases-run), [here](#its-second-heading), \
                [web](https://example.com/x.md), ![plot](roofline-xeon-vm-2026-12-04.svg), \
                `src/run/runner.rs`, `results/<stem>.csv`, `scripts/sim-cuda run --quick`\n\n\
                ```sh\n[not a link](nowhere.md) `src/not/code.rs`\n```\n";
    assert_eq!(broken_links(&page, good), Vec::<String>::new());
    assert_eq!(missing_paths(top(), good), Vec::<String>::new());
    for (bad, what) in [
        ("[x](nowhere.md)", "nowhere.md: no such file"),
        (
            "[x](../README.md#no-such-heading)",
            "no heading has the anchor",
        ),
        ("[x](#its-third-heading)", "no heading has the anchor"),
        ("![x](missing.svg)", "missing.svg: no such file"),
        (
            "<img src=\"missing.png\" width=\"600\">",
            "missing.png: no such file",
        ),
        ("[x]: ../src/nowhere.rs", "no such file"),
    ] {
        let found = broken_links(&page, &format!("{good}\n{bad}\n"));
        assert!(
            found.len() == 1 && found[0].contains(what),
            "{bad}: {found:?}"
        );
    }
    let stem = "`results/vm-host-amd-epyc-20261203T184829Z-f90759ee`";
    assert_eq!(missing_paths(top(), stem), Vec::<String>::new());
    let found = missing_paths(top(), &format!("{good}\nsee `src/backend/host_gemm.rs`.\n"));
    assert!(
        found.len() == 1 && found[0].contains("src/backend/host_gemm.rs"),
        "{found:?}"
    );
}

#[test]
fn anchors_are_github_s() {
    let a = anchors("# roofprobe\n## `roofprobe run`\n## The CSV, and its schema\n## Exports\n## Exports\n```\n# not a heading\n```\n#not either\n");
    let mut a: Vec<_> = a.into_iter().collect();
    a.sort();
    assert_eq!(
        a,
        [
            "exports",
            "exports-1",
            "roofprobe",
            "roofprobe-run",
            "the-csv-and-its-schema"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Command lines

/// The words of a shell line, quotes removed, as far as the docs need: `'…'` and `"…"`,
/// a backslash escaping the next character, a `#` at the start of a word beginning a comment,
/// and `|`, `;`, `&`, `<`, `>` (with a file descriptor before it) as separate words. A docs
/// placeholder, `<run_id>` (a `<` closed by `>` before any space), is text, not a redirection.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut started = false;
    let mut chars = line.chars().peekable();
    let flush = |word: &mut String, started: &mut bool, words: &mut Vec<String>| {
        if *started {
            words.push(std::mem::take(word));
            *started = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                started = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                started = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                started = true;
                word.extend(chars.next());
            }
            '#' if !started => break,
            '<' if placeholder_ahead(chars.clone()) => {
                started = true;
                word.push('<');
                for p in chars.by_ref() {
                    word.push(p);
                    if p == '>' {
                        break;
                    }
                }
            }
            c if c.is_whitespace() => flush(&mut word, &mut started, &mut words),
            '|' | ';' | '&' | '<' | '>' => {
                // `2>` and `2>&1`: the descriptor belongs to the operator
                if started && (c == '>' || c == '<') && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    started = false;
                }
                flush(&mut word, &mut started, &mut words);
                let mut op = c.to_string();
                while let Some(&n) = chars.peek() {
                    if matches!(n, '|' | '&' | '>') {
                        op.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                words.push(op);
            }
            c => {
                started = true;
                word.push(c);
            }
        }
    }
    flush(&mut word, &mut started, &mut words);
    words
}

/// Whether the characters after a `<` close it with `>` before any space or other `<`.
fn placeholder_ahead(mut rest: impl Iterator<Item = char>) -> bool {
    let mut len = 0;
    for c in rest.by_ref() {
        match c {
            '>' => return len > 0,
            '<' => return false,
            c if c.is_whitespace() => return false,
            _ => len += 1,
        }
    }
    false
}

fn is_operator(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| matches!(c, '|' | ';' | '&' | '<' | '>'))
}

/// The roofprobe argument lists of a shell line: for each simple command that runs roofprobe
/// (`roofprobe`, a path ending in `/roofprobe`, `cargo run [--release] -- …` of this package,
/// or `scripts/sim-cuda`), its arguments up to the first operator. Leading `NAME=value`
/// assignments are skipped.
fn roofprobe_args(line: &str) -> Vec<Vec<String>> {
    let words = shell_words(line.trim_start().trim_start_matches("$ "));
    let mut found = Vec::new();
    for command in words.split(|w| matches!(w.as_str(), "|" | "||" | "&&" | ";" | "&")) {
        let mut words = command
            .iter()
            .skip_while(|w| {
                w.split_once('=').is_some_and(|(name, _)| {
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
            })
            .take_while(|w| !is_operator(w));
        let Some(program) = words.next() else {
            continue;
        };
        let rest: Vec<String> = words.cloned().collect();
        let args = if program == "roofprobe"
            || program.ends_with("/roofprobe")
            || program.ends_with("scripts/sim-cuda")
        {
            rest
        } else if program == "cargo" && rest.first().is_some_and(|w| w == "run") {
            let Some(dashes) = rest.iter().position(|w| w == "--") else {
                continue;
            };
            // another package's or an example's run is not roofprobe's
            if rest[..dashes]
                .iter()
                .any(|w| matches!(w.as_str(), "-p" | "--package" | "--example" | "--bin"))
            {
                continue;
            }
            rest[dashes + 1..].to_vec()
        } else {
            continue;
        };
        found.push(args);
    }
    found
}

/// The command lines of a page's fenced code blocks that clap refuses, with clap's reason.
/// Lines ending in `\` continue on the next.
fn refused_commands(text: &str) -> Vec<String> {
    let mut refused = Vec::new();
    let mut joined: Option<(usize, String)> = None;
    for (n, line) in parse(text).code {
        let (start, mut whole) = joined.take().unwrap_or((n, String::new()));
        match line.trim_end().strip_suffix('\\') {
            Some(part) => {
                whole.push_str(part);
                joined = Some((start, whole));
                continue;
            }
            None => whole.push_str(line),
        }
        for args in roofprobe_args(&whole) {
            let argv = std::iter::once("roofprobe".to_string()).chain(args.iter().cloned());
            if let Err(e) = Cli::try_parse_from(argv) {
                use clap::error::ErrorKind::{DisplayHelp, DisplayVersion};
                if !matches!(e.kind(), DisplayHelp | DisplayVersion) {
                    let why = e.to_string();
                    let why = why.lines().next().unwrap_or("").trim();
                    refused.push(format!(
                        "line {start}: `roofprobe {}`: {why}",
                        args.join(" ")
                    ));
                }
            }
        }
    }
    refused
}

#[test]
fn every_command_line_in_the_docs_parses() {
    let mut refused = Vec::new();
    let mut seen = 0;
    for page in pages() {
        let text = read(&page);
        seen += parse(&text)
            .code
            .iter()
            .map(|(_, l)| roofprobe_args(l).len())
            .sum::<usize>();
        refused.extend(
            refused_commands(&text)
                .into_iter()
                .map(|r| format!("{}: {r}", shown(&page))),
        );
    }
    assert!(
        refused.is_empty(),
        "command lines in the docs that clap refuses:\n  {}",
        refused.join("\n  ")
    );
    assert!(
        seen >= 20,
        "only {seen} roofprobe command lines found in the docs"
    );
}

#[test]
fn a_command_line_clap_refuses_is_caught() {
    let good = "```sh\n\
                roofprobe run --device host --quick   # a comment: --not-a-flag\n\
                cargo run --release -- run\n\
                ./target/release/roofprobe devices --json > devices.json 2>&1\n\
                ROOFPROBE_CUBLAS=/x/libcublas.so roofprobe devices | head\n\
                roofprobe export results/x.csv --format aiconfigurator --set data_dir=data/mine \\\n\
                  --set node.num_gpus_per_node=8 -o systems/mine.yaml\n\
                roofprobe specs --compare \"RTX 3090\" 'A100 80GB SXM4'\n\
                cargo run -p roofprobe-calibration --example ceilings -- FILE.json\n\
                roofprobe run --help\n\
                ```\n";
    assert_eq!(refused_commands(good), Vec::<String>::new());
    assert_eq!(
        parse(good)
            .code
            .iter()
            .map(|(_, l)| roofprobe_args(l).len())
            .sum::<usize>(),
        7,
        "every roofprobe command line of the block is found (the continued one's first line)"
    );
    for (bad, what) in [
        ("roofprobe run --no-such-flag", "--no-such-flag"),
        ("roofprobe run --device gpu", "gpu"),
        ("cargo run --release -- rnu", "rnu"),
        ("scripts/sim-cuda run --quick --samples 0", "0"),
        ("./target/release/roofprobe plot", "required"),
        (
            "roofprobe export a.csv \\\n  --format no-such-format",
            "no-such-format",
        ),
        ("echo x | roofprobe specs --compare A", "--compare"),
    ] {
        let found = refused_commands(&format!("```sh\n{bad}\n```\n"));
        assert!(
            found.len() == 1 && found[0].contains(what),
            "{bad}: {found:?}"
        );
    }
}

#[test]
fn shell_words_are_split_as_a_shell_splits_them() {
    assert_eq!(
        shell_words(r#"a "b c" 'd e' f\ g 2>&1 >out|h # i"#),
        ["a", "b c", "d e", "f g", ">&", "1", ">", "out", "|", "h"]
    );
    assert_eq!(
        shell_words("x results/<stem>.csv --run <run_id> < in <a b>"),
        [
            "x",
            "results/<stem>.csv",
            "--run",
            "<run_id>",
            "<",
            "in",
            "<",
            "a",
            "b",
            ">"
        ]
    );
}
