//! The house rule of docs/architecture.md, checked on every CI run: data flows one way. Each
//! folder of src/ is a layer, and a module may use only its own layer and those below it; no two
//! folders use each other, even within a layer (no circles); and the two backends never use each
//! other.
//!
//! Every file under src/ is parsed (syn) and every path that names a module of this crate is
//! resolved: `use` trees, paths in code and types, and `crate::…` inside macro calls. Code under
//! `#[cfg(test)]` is left out: a test stands above everything it tests and is no part of the data
//! flow (the test modules that reach far are in tests/ anyway). Doc links are not code and are
//! not counted.
//!
//! Three more house rules of docs/architecture.md, on the same parse: every file of src/ is small
//! enough to read (at most [`MAX_FILE_LINES`]), a test module written inline in src/ stays
//! short (at most [`MAX_INLINE_TEST_LINES`]; longer tests live in tests/, in this binary), and
//! so does a function (at most [`MAX_FN_LINES`], unless its doc says why: [`LONG_FN_MARKER`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The layers, lowest first. A module's layer is its first path segment (its folder under src/);
/// the files at the top of src/ other than lib.rs, main.rs and cli.rs are the foundation.
const LAYERS: &[(&str, &[&str])] = &[
    ("foundation", &["error", "text", "units", "device", "files"]),
    ("stats", &["stats"]),
    ("cases", &["cases"]),
    ("kernels", &["kernels"]),
    ("specs", &["specs"]),
    ("backend", &["backend"]),
    ("results", &["results"]),
    ("analysis", &["analysis"]),
    ("render", &["render"]),
    ("run", &["run"]),
    ("commands", &["commands", "cli", "main"]),
];

/// Folders that must not use each other in either direction.
const STRANGERS: &[(&str, &str)] = &[("backend/cuda", "backend/host")];

/// The most lines a file of src/ may have: past it, the file is split by concept (issue 55:
/// `backend/host/mod.rs` gave its STREAM case to `stream_case.rs`).
const MAX_FILE_LINES: usize = 1200;

/// The most lines an inline `#[cfg(test)]` module in src/ may have, from its attribute to its
/// closing brace: past it, its tests move to tests/ (as tests/runner.rs and tests/record.rs did).
const MAX_INLINE_TEST_LINES: usize = 200;

/// The most lines a function of src/ outside `#[cfg(test)]` may have, from its `fn` line to its
/// closing brace, unless its `///` doc gives the reason in a sentence opening with
/// [`LONG_FN_MARKER`]: past it, the function is split by concept (issue 55: the watch's trail
/// into header, axes, roofs, trail and legend).
const MAX_FN_LINES: usize = 150;

/// How a long function's doc opens the sentence that says why it stays whole ("Long because
/// it is the timed region ..."): the reason stands where a reader of the function meets it.
const LONG_FN_MARKER: &str = "Long because";

/// Inline test modules allowed past [`MAX_INLINE_TEST_LINES`], each with the reason it must stay
/// in the library. An entry no longer needed is an error too, so the list cannot go stale.
const LONG_INLINE_TESTS: &[(&str, &str)] = &[(
    "backend/host/gemm.rs",
    "the GEMM kernels of each SIMD set this CPU has, bit for bit against the reference: \
         .ci/aarch64 builds the library's tests alone for AArch64 and runs backend::host under \
         qemu-user (NEON), where the suite is not built",
)];

fn layer_of(module: &[String]) -> Option<usize> {
    let first = module.first()?;
    LAYERS
        .iter()
        .position(|(_, roots)| roots.contains(&first.as_str()))
}

/// One file of src/: its module path and the folder it sits in (relative to src/).
struct SourceFile {
    path: PathBuf,
    /// The path below src/ (`backend/host/mod.rs`).
    rel: String,
    module: Vec<String>,
    folder: String,
}

fn source_files(src: &Path) -> Vec<SourceFile> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    let mut paths = Vec::new();
    walk(src, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let rel = path.strip_prefix(src).unwrap();
            let mut module: Vec<String> = rel
                .with_extension("")
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            // The files at the top of src/ are two rooms: the foundation below everything, and
            // the command line (cli.rs, main.rs) above it, beside commands/.
            let folder = match rel.parent().map(|p| p.to_string_lossy().into_owned()) {
                Some(f) if !f.is_empty() => f,
                _ => match layer_of(&module) {
                    Some(l) => LAYERS[l].0.to_string(),
                    None => "(crate root)".to_string(),
                },
            };
            SourceFile {
                rel: rel.to_string_lossy().into_owned(),
                path,
                module,
                folder,
            }
        })
        .collect()
}

/// A path this crate's code names, resolved to an absolute module path, and where.
struct Use {
    target: Vec<String>,
    line: usize,
}

/// Collects the crate paths of one file, outside `#[cfg(test)]`.
struct Collector<'a> {
    /// The module the code being visited is in (the file's, then any inline `mod` within).
    module: Vec<String>,
    /// Names of this crate's modules, absolute: resolves a path that starts at a child module.
    modules: &'a BTreeSet<Vec<String>>,
    uses: Vec<Use>,
    /// Modules declared under `#[cfg(test)]` (`#[cfg(test)] mod browser;`): their files are
    /// test code too.
    test_modules: Vec<Vec<String>>,
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && {
            let mut test = false;
            let _ = a.parse_nested_meta(|m| {
                test |= m.path.is_ident("test");
                Ok(())
            });
            test
        }
    })
}

impl Collector<'_> {
    /// `segments` as an absolute module path, where it names this crate.
    fn resolve(&self, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "roofprobe" if self.module.first().is_some_and(|m| m == "main") => Vec::new(),
            "self" => self.module.clone(),
            "super" => {
                let mut b = self.module.clone();
                let mut rest = segments;
                while rest.first().is_some_and(|s| s == "super") {
                    b.pop();
                    rest = &rest[1..];
                }
                b.extend(rest.iter().cloned());
                return Some(b);
            }
            _ => {
                // a child module of this one, named bare (`use cpu::read_text`)
                let mut child = self.module.clone();
                child.push(first.clone());
                if self.modules.contains(&child) {
                    child.extend(segments[1..].iter().cloned());
                    return Some(child);
                }
                return None;
            }
        };
        base.extend(segments[1..].iter().cloned());
        Some(base)
    }

    fn record(&mut self, segments: Vec<String>, line: usize) {
        if let Some(target) = self.resolve(&segments) {
            if !target.is_empty() {
                self.uses.push(Use { target, line });
            }
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, line: usize) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, line);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                if n.ident != "self" {
                    full.push(n.ident.to_string());
                }
                self.record(full, line);
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                self.record(full, line);
            }
            syn::UseTree::Glob(_) => self.record(prefix.clone(), line),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, line);
                }
            }
        }
    }

    /// `crate :: a :: b` sequences in a macro's tokens (`crate::say!(…, crate::text::x(…))`).
    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        let trees: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            if let proc_macro2::TokenTree::Group(g) = &trees[i] {
                self.tokens(g.stream());
            }
            if let proc_macro2::TokenTree::Ident(id) = &trees[i] {
                if id == "crate" {
                    let line = id.span().start().line;
                    let mut segments = vec!["crate".to_string()];
                    let mut j = i + 1;
                    loop {
                        let colons = matches!(
                            (&trees.get(j), &trees.get(j + 1)),
                            (Some(proc_macro2::TokenTree::Punct(a)), Some(proc_macro2::TokenTree::Punct(b)))
                                if a.as_char() == ':' && b.as_char() == ':'
                        );
                        match (colons, trees.get(j + 2)) {
                            (true, Some(proc_macro2::TokenTree::Ident(next))) => {
                                segments.push(next.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    self.record(segments, line);
                    i = j;
                    continue;
                }
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match item {
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Macro(i) => &i.attrs,
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::Type(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            _ => &[],
        };
        if is_test_only(attrs) {
            if let syn::Item::Mod(m) = item {
                let mut path = self.module.clone();
                path.push(m.ident.to_string());
                self.test_modules.push(path);
            }
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.module.push(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
        self.module.pop();
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let line = u.use_token.span.start().line;
        self.use_tree(&mut Vec::new(), &u.tree, line);
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        if let syn::ImplItem::Fn(f) = item {
            if is_test_only(&f.attrs) {
                return;
            }
        }
        syn::visit::visit_impl_item(self, item);
    }

    fn visit_stmt(&mut self, s: &'ast syn::Stmt) {
        if let syn::Stmt::Item(item) = s {
            // a `use` or item inside a function resolves from the function's module
            return self.visit_item(item);
        }
        syn::visit::visit_stmt(self, s);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 || segments.first().is_some_and(|s| s == "crate") {
            let line = p
                .segments
                .first()
                .map(|s| s.ident.span().start().line)
                .unwrap_or(0);
            self.record(segments, line);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

/// The file (module) that defines `target`: its longest prefix that is a module of the crate.
fn owner<'a>(target: &[String], files: &'a [SourceFile]) -> Option<&'a SourceFile> {
    (1..=target.len())
        .rev()
        .find_map(|n| files.iter().find(|f| f.module == target[..n]))
}

/// Every use of one folder by another: (from folder, to folder) → the first place it happens.
fn folder_uses(files: &[SourceFile]) -> (BTreeMap<(String, String), String>, Vec<String>) {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    let mut edges = BTreeMap::new();
    let mut upward = Vec::new();
    let mut collected = Vec::new();
    let mut test_modules = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f.path).unwrap();
        let parsed = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{}: does not parse: {e}", f.path.display()));
        let mut c = Collector {
            module: f.module.clone(),
            modules: &modules,
            uses: Vec::new(),
            test_modules: Vec::new(),
        };
        c.visit_file(&parsed);
        test_modules.append(&mut c.test_modules);
        collected.push((f, c.uses));
    }
    for (f, uses) in collected {
        if test_modules.iter().any(|t| f.module.starts_with(t)) {
            continue;
        }
        let from_layer = layer_of(&f.module);
        for u in uses {
            let Some(to) = owner(&u.target, files) else {
                continue;
            };
            let place = format!("src/{}:{} uses {}", f.rel, u.line, u.target.join("::"));
            if let (Some(a), Some(b)) = (from_layer, layer_of(&to.module)) {
                if b > a {
                    upward.push(format!(
                        "{place}: layer {} uses layer {}, which is above it",
                        LAYERS[a].0, LAYERS[b].0
                    ));
                }
            }
            if to.folder != f.folder {
                edges
                    .entry((f.folder.clone(), to.folder.clone()))
                    .or_insert(place);
            }
        }
    }
    (edges, upward)
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn every_module_uses_only_its_own_layer_and_those_below() {
    let files = source_files(&src());
    let unplaced: Vec<String> = files
        .iter()
        .filter(|f| !f.module.is_empty() && layer_of(&f.module).is_none())
        .map(|f| f.path.display().to_string())
        .collect();
    assert!(
        unplaced.is_empty(),
        "files in no layer (add them to LAYERS in tests/layers.rs and to docs/architecture.md): \
         {unplaced:?}"
    );
    let (_, upward) = folder_uses(&files);
    assert!(
        upward.is_empty(),
        "{} upward uses:\n{}",
        upward.len(),
        upward.join("\n")
    );
}

#[test]
fn no_two_folders_use_each_other() {
    let files = source_files(&src());
    let (edges, _) = folder_uses(&files);
    // a circle among folders: a strongly connected set of more than one (Tarjan would do; the
    // folders are few, so reachability is enough)
    let folders: BTreeSet<&String> = edges.keys().flat_map(|(a, b)| [a, b]).collect();
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(x) = todo.pop() {
            for (a, b) in edges.keys() {
                if *a == x && seen.insert(b.clone()) {
                    todo.push(b.clone());
                }
            }
        }
        seen
    };
    let mut circles = Vec::new();
    for a in &folders {
        for (x, b) in edges.keys() {
            if x == *a && reach(b).contains(*a) {
                circles.push(format!(
                    "src/{a} -> src/{b} ({}), and src/{b} reaches src/{a} back",
                    edges[&((*a).clone(), b.clone())]
                ));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "folders in a circle:\n{}",
        circles.join("\n")
    );
    let mut met = Vec::new();
    for (a, b) in STRANGERS {
        for (from, to) in [(a, b), (b, a)] {
            if let Some(place) = edges.get(&(from.to_string(), to.to_string())) {
                met.push(format!("src/{from} uses src/{to}: {place}"));
            }
        }
    }
    assert!(
        met.is_empty(),
        "the backends use each other:\n{}",
        met.join("\n")
    );
}

/// The files of src/ over [`MAX_FILE_LINES`]: `src/path (N lines)`.
fn long_files(files: &[SourceFile]) -> Vec<String> {
    files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(&f.path).unwrap().lines().count();
            (lines > MAX_FILE_LINES).then(|| format!("src/{} ({lines} lines)", f.rel))
        })
        .collect()
}

/// Every inline `#[cfg(test)] mod … { … }` of src/, nested ones too: (file below src/, the
/// line of its first attribute, its lines from that attribute to its closing brace).
fn inline_test_modules(files: &[SourceFile]) -> Vec<(String, usize, usize)> {
    fn walk(items: &[syn::Item], rel: &str, out: &mut Vec<(String, usize, usize)>) {
        for item in items {
            let syn::Item::Mod(m) = item else { continue };
            let Some((brace, inner)) = &m.content else {
                continue;
            };
            if is_test_only(&m.attrs) {
                let start = m
                    .attrs
                    .first()
                    .map(|a| a.pound_token.span.start().line)
                    .unwrap_or(m.mod_token.span.start().line);
                let end = brace.span.close().end().line;
                out.push((rel.to_string(), start, end + 1 - start));
            } else {
                walk(inner, rel, out);
            }
        }
    }
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f.path).unwrap();
        let parsed = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{}: does not parse: {e}", f.path.display()));
        walk(&parsed.items, &f.rel, &mut out);
    }
    out
}

/// The inline test modules over [`MAX_INLINE_TEST_LINES`] that `allowed` does not name (by
/// file), and the names in `allowed` that no longer need to be there.
fn long_inline_tests(files: &[SourceFile], allowed: &[(&str, &str)]) -> (Vec<String>, Vec<String>) {
    let long: Vec<(String, usize, usize)> = inline_test_modules(files)
        .into_iter()
        .filter(|(_, _, lines)| *lines > MAX_INLINE_TEST_LINES)
        .collect();
    let over = long
        .iter()
        .filter(|(rel, _, _)| !allowed.iter().any(|(a, _)| a == rel))
        .map(|(rel, line, lines)| format!("src/{rel}:{line}: a test module of {lines} lines"))
        .collect();
    let stale = allowed
        .iter()
        .filter(|(a, _)| !long.iter().any(|(rel, _, _)| rel == a))
        .map(|(a, _)| format!("src/{a}"))
        .collect();
    (over, stale)
}

/// Every function of src/ with a body, outside `#[cfg(test)]` (free functions, methods, a
/// trait's provided methods, in inline modules too): `(file below src/, its name, the line of
/// its `fn`, its lines from there to its closing brace, its doc joined into one line)`. The
/// files of modules declared `#[cfg(test)] mod name;` are test code and left out.
fn functions(files: &[SourceFile]) -> Vec<(String, String, usize, usize, String)> {
    type Out = Vec<(String, String, usize, usize, String)>;
    fn doc(attrs: &[syn::Attribute]) -> String {
        let lines: Vec<String> = attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"))
            .filter_map(|a| match &a.meta {
                syn::Meta::NameValue(syn::MetaNameValue {
                    value:
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(s),
                            ..
                        }),
                    ..
                }) => Some(s.value()),
                _ => None,
            })
            .collect();
        lines
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }
    fn one(
        rel: &str,
        attrs: &[syn::Attribute],
        sig: &syn::Signature,
        block: &syn::Block,
        out: &mut Out,
    ) {
        if is_test_only(attrs) {
            return;
        }
        let start = sig.fn_token.span.start().line;
        let end = block.brace_token.span.close().end().line;
        out.push((
            rel.to_string(),
            sig.ident.to_string(),
            start,
            end + 1 - start,
            doc(attrs),
        ));
    }
    fn walk(items: &[syn::Item], rel: &str, out: &mut Out, test_mods: &mut Vec<String>) {
        for item in items {
            match item {
                syn::Item::Fn(f) => one(rel, &f.attrs, &f.sig, &f.block, out),
                syn::Item::Impl(i) if !is_test_only(&i.attrs) => {
                    for it in &i.items {
                        if let syn::ImplItem::Fn(f) = it {
                            one(rel, &f.attrs, &f.sig, &f.block, out);
                        }
                    }
                }
                syn::Item::Trait(t) if !is_test_only(&t.attrs) => {
                    for it in &t.items {
                        if let syn::TraitItem::Fn(syn::TraitItemFn {
                            attrs,
                            sig,
                            default: Some(block),
                            ..
                        }) = it
                        {
                            one(rel, attrs, sig, block, out);
                        }
                    }
                }
                // a test module's code is left out; the file of one declared bare is noted
                syn::Item::Mod(m) => match (&m.content, is_test_only(&m.attrs)) {
                    (None, true) => test_mods.push(m.ident.to_string()),
                    (Some((_, inner)), false) => walk(inner, rel, out, test_mods),
                    _ => {}
                },
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    let mut test_files: Vec<Vec<String>> = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f.path).unwrap();
        let parsed = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{}: does not parse: {e}", f.path.display()));
        let mut test_mods = Vec::new();
        let mut found = Vec::new();
        walk(&parsed.items, &f.rel, &mut found, &mut test_mods);
        test_files.extend(test_mods.into_iter().map(|m| {
            let mut path = f.module.clone();
            path.push(m);
            path
        }));
        out.push((f.module.clone(), found));
    }
    out.into_iter()
        .filter(|(module, _)| !test_files.iter().any(|t| module.starts_with(t)))
        .flat_map(|(_, found)| found)
        .collect()
}

/// The functions over [`MAX_FN_LINES`] whose doc gives no reason (no sentence opening with
/// [`LONG_FN_MARKER`]): `src/path:line: fn name, N lines`.
fn long_functions(files: &[SourceFile]) -> Vec<String> {
    functions(files)
        .into_iter()
        .filter(|(_, _, _, lines, doc)| {
            *lines > MAX_FN_LINES
                && !(doc.starts_with(LONG_FN_MARKER)
                    || doc.contains(&format!(". {LONG_FN_MARKER}")))
        })
        .map(|(rel, name, line, lines, _)| format!("src/{rel}:{line}: fn {name}, {lines} lines"))
        .collect()
}

#[test]
fn no_function_in_src_is_long_without_a_reason() {
    let long = long_functions(&source_files(&src()));
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines (split each by concept into well-named functions, \
         or say in its /// doc why it must stay whole, in a sentence opening \
         \"{LONG_FN_MARKER}\"):\n{}",
        long.join("\n")
    );
}

#[test]
fn no_file_in_src_is_too_long_to_read() {
    let long = long_files(&source_files(&src()));
    assert!(
        long.is_empty(),
        "files over {MAX_FILE_LINES} lines (split each by concept into a folder, each file \
         opening with a //! doc of what it owns):\n{}",
        long.join("\n")
    );
}

#[test]
fn no_inline_test_module_is_long() {
    let (over, stale) = long_inline_tests(&source_files(&src()), LONG_INLINE_TESTS);
    assert!(
        over.is_empty(),
        "inline test modules over {MAX_INLINE_TEST_LINES} lines (move their tests to tests/, \
         making what they use public and #[doc(hidden)]):\n{}",
        over.join("\n")
    );
    assert!(
        stale.is_empty(),
        "LONG_INLINE_TESTS names modules that are no longer long (take them off): {stale:?}"
    );
}

/// The checker itself finds what it is for: an upward use planted in a copy of a small tree.
#[test]
fn the_layer_check_catches_a_planted_upward_use_and_circle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    for (file, text) in [
        ("lib.rs", "pub mod cases;\npub mod render;\npub mod text;\n"),
        ("text.rs", "pub fn f() {}\n"),
        ("cases/mod.rs", "pub mod a;\nuse crate::render::draw;\n"),
        ("cases/a.rs", "pub fn g() { crate::text::f(); }\n"),
        ("render/mod.rs", "pub fn draw() { crate::cases::a::g(); }\n"),
    ] {
        let p = src.join(file);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let files = source_files(&src);
    let (edges, upward) = folder_uses(&files);
    assert_eq!(upward.len(), 1, "{upward:?}");
    assert!(
        upward[0].contains("src/cases/mod.rs:2 uses render::draw"),
        "{upward:?}"
    );
    assert!(edges.contains_key(&("cases".into(), "render".into())));
    assert!(edges.contains_key(&("render".into(), "cases".into())));
}

/// The length checks find what they are for: a file one line past the limit and an inline test
/// module one line past its limit, planted in a small tree, and an allowance no longer needed.
#[test]
fn the_length_checks_catch_a_planted_long_file_and_test_module() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let long_file = "// a line\n".repeat(MAX_FILE_LINES + 1);
    // the attribute, `mod tests {`, the body, `}`: one line over
    let long_tests = format!(
        "pub fn f() {{}}\n#[cfg(test)]\nmod tests {{\n{}}}\n",
        "    // a line\n".repeat(MAX_INLINE_TEST_LINES - 2)
    );
    let short_tests = long_tests.replacen("    // a line\n", "", 1);
    for (file, text) in [
        ("lib.rs", "pub mod text;\npub mod units;\npub mod error;\n"),
        ("text.rs", long_file.as_str()),
        ("units.rs", long_tests.as_str()),
        ("error.rs", short_tests.as_str()),
    ] {
        let p = src.join(file);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let files = source_files(&src);
    assert_eq!(
        long_files(&files),
        [format!("src/text.rs ({} lines)", MAX_FILE_LINES + 1)]
    );
    let (over, stale) = long_inline_tests(&files, &[("error.rs", "a reason")]);
    assert_eq!(
        over,
        [format!(
            "src/units.rs:2: a test module of {} lines",
            MAX_INLINE_TEST_LINES + 1
        )]
    );
    assert_eq!(stale, ["src/error.rs"]);
    let (over, stale) = long_inline_tests(&files, &[("units.rs", "a reason")]);
    assert!(over.is_empty() && stale.is_empty(), "{over:?} {stale:?}");
}

/// The function check finds what it is for: a function, a method and a trait's provided method
/// one line past the limit, planted in a small tree, are each caught; the same with a reason in
/// its doc, at [`MAX_FN_LINES`] exactly, or in test code, is not.
#[test]
fn the_function_check_catches_a_planted_long_function() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    // `fn name() {`, the body, `}`: `extra` lines past the limit
    let body = |name: &str, extra: usize| {
        format!(
            "fn {name}() {{\n{}}}\n",
            "    let _ = 1;\n".repeat(MAX_FN_LINES + extra - 2)
        )
    };
    let long = body("long", 1);
    let reason = format!(
        "/// What it does.\n///\n/// {LONG_FN_MARKER} it is one table.\n#[inline]\n{}",
        body("reasoned", 1)
    );
    let at_limit = body("at_limit", 0);
    let method = format!(
        "pub struct S;\nimpl S {{\n{}}}\npub trait T {{\n{}}}\n",
        body("method", 1),
        body("provided", 1)
    );
    let tested = format!("#[cfg(test)]\nmod tests {{\n{}}}\n", body("a_test", 1));
    let mentioned = format!(
        "/// Not {LONG_FN_MARKER} a sentence.\n{}",
        body("mentioned", 1)
    );
    for (file, text) in [
        (
            "lib.rs",
            "pub mod text;\npub mod units;\npub mod error;\npub mod files;\n",
        ),
        ("text.rs", format!("{long}{reason}{at_limit}").as_str()),
        ("units.rs", method.as_str()),
        (
            "error.rs",
            format!("{tested}#[cfg(test)]\nmod helpers;\n").as_str(),
        ),
        ("error/helpers.rs", body("helper", 1).as_str()),
        ("files.rs", mentioned.as_str()),
    ] {
        let p = src.join(file);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let over = MAX_FN_LINES + 1;
    assert_eq!(
        long_functions(&source_files(&src)),
        [
            format!("src/files.rs:2: fn mentioned, {over} lines"),
            format!("src/text.rs:1: fn long, {over} lines"),
            format!("src/units.rs:3: fn method, {over} lines"),
            format!("src/units.rs:{}: fn provided, {over} lines", 3 + over + 2),
        ]
    );
}
