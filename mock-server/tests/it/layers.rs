//! The reference server's layer rule, kept (as `suite/tests/it/layers.rs` keeps the suite's):
//! every `crate::` or `super::` path in a module of `mock-server/src` points to a module listed
//! before it in ARCHITECTURE.md's line "Layers of `mock-server/src`, bottom first", so there is
//! no import circle and no upward import, and the map stays true (a new module must be placed in
//! it). An entry may be a submodule (`dev::oauth`): a file belongs to the longest entry that is
//! its module or one of its ancestors. And no module but `app`, `router` and the `dev::` ones
//! names a `dev::` path: the healthy layers ask the development parts through `App`'s values.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The layers as ARCHITECTURE.md lists them, bottom first.
fn layers() -> Vec<String> {
    let map = std::fs::read_to_string(root().join("../ARCHITECTURE.md")).unwrap();
    let start =
        map.find("Layers of `mock-server/src`, bottom first").expect("the layer line in ARCHITECTURE.md");
    let paragraph = &map[start..map[start..].find("\n\n").map_or(map.len(), |end| start + end)];
    let list = &paragraph[paragraph.find("):").expect("the list after the parenthesis") + 2..];
    list.split(',').map(|m| m.trim().trim_matches(['`', '.', ' ', '\n'].as_ref()).to_owned()).collect()
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under `src`: `dev/oauth.rs` → `dev::oauth`, `tools/mod.rs` →
/// `tools`.
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts.join("::")
}

/// The longest entry of `layers` that is `path` or one of its ancestors, by rank.
fn place(layers: &[String], path: &str) -> Option<usize> {
    layers
        .iter()
        .enumerate()
        .filter(|(_, l)| path == l.as_str() || path.starts_with(&format!("{l}::")))
        .max_by_key(|(_, l)| l.len())
        .map(|(rank, _)| rank)
}

fn ident(s: &str) -> String {
    s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
}

/// The paths of a use tree starting at `s` (after `prefix::`), groups expanded: `a::{b, c::d}`
/// is `a::b` and `a::c::d`, `{self, x}` is the prefix itself and `prefix::x`.
fn expand(s: &str, prefix: &str, out: &mut Vec<String>) {
    let s = s.trim_start();
    if let Some(group) = s.strip_prefix('{') {
        let (mut depth, mut start) = (0, 0);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    expand(&group[start..i], prefix, out);
                    return;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&group[start..i], prefix, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        return;
    }
    let name = ident(s);
    if name.is_empty() {
        return;
    }
    if name == "self" {
        out.push(prefix.to_owned());
        return;
    }
    let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}::{name}") };
    match s[name.len()..].strip_prefix("::") {
        Some(rest) => expand(rest, &path, out),
        None => out.push(path),
    }
}

/// The crate paths a module's text names through `crate::…` (in `use crate::{a, b::c}` too) or
/// `super::…` (resolved from `module`), outside comments and `#[cfg(test)]` modules: tests may
/// reach anything. Paths are as long as written: `crate::dev::oauth::OAuth` stays whole.
fn uses(text: &str, module: &str) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let code: String =
        code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    let mut found = Vec::new();
    let before_ok =
        |i: usize| !code[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    for (i, _) in code.match_indices("crate::") {
        if before_ok(i) {
            expand(&code[i + "crate::".len()..], "", &mut found);
        }
    }
    for (i, _) in code.match_indices("super::") {
        if !before_ok(i) {
            continue;
        }
        let mut base: Vec<&str> = module.split("::").collect();
        let mut rest = &code[i..];
        while let Some(after) = rest.strip_prefix("super::") {
            base.pop();
            rest = after;
        }
        expand(rest, &base.join("::"), &mut found);
    }
    found.into_iter().filter(|p| !p.is_empty()).collect()
}

#[test]
fn every_module_uses_only_the_layers_below_it() {
    let layers = layers();
    let src = root().join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut wrong = Vec::new();
    let mut unplaced = BTreeSet::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let module = module_of(rel);
        // The crate root composes everything; a `tests.rs` is a `#[cfg(test)]` module.
        if module == "lib" || module == "main" || rel.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let rank = place(&layers, &module);
        // A parent whose children are placed one by one (`dev`) holds no code of its own.
        let parent_only = rank.is_none() && layers.iter().any(|l| l.starts_with(&format!("{module}::")));
        if rank.is_none() && !parent_only {
            unplaced.insert(module.clone());
            continue;
        }
        for used in uses(&std::fs::read_to_string(&file).unwrap(), &module) {
            let dev_only = used.starts_with("dev::") || used == "dev";
            let composes = module == "app" || module == "router" || module.starts_with("dev::");
            if dev_only && !composes {
                wrong
                    .push(format!("{} uses crate::{used}: only app, router and dev name dev", rel.display()));
            }
            match (place(&layers, &used), rank) {
                (Some(r), Some(own)) if r <= own => {}
                _ => wrong.push(format!("{} ({module}) uses crate::{used}", rel.display())),
            }
        }
    }
    assert!(unplaced.is_empty(), "modules missing from ARCHITECTURE.md's layer line: {unplaced:?}");
    assert!(
        wrong.is_empty(),
        "imports that point up or sideways (ARCHITECTURE.md, mock-server layers):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_reader_sees_grouped_nested_and_relative_paths() {
    let text = "use crate::{auth::Principal, transport::{self, http}};\n\
                use super::{Call, cursor::Binding};\n\
                // crate::router, in a comment\n\
                fn f() { crate::dev::oauth::x(); super::super::y(); }\n\
                #[cfg(test)]\nmod tests { use crate::app; }";
    let found: Vec<String> = uses(text, "tools::orders").into_iter().collect();
    assert_eq!(
        found,
        [
            "auth::Principal",
            "dev::oauth::x",
            "tools::Call",
            "tools::cursor::Binding",
            "transport",
            "transport::http",
            "y"
        ]
    );
    let layers: Vec<String> = ["state", "dev::oauth", "app", "transport"].map(String::from).to_vec();
    assert_eq!(place(&layers, "dev::oauth::OAuth"), Some(1));
    assert_eq!(place(&layers, "state::store::Key"), Some(0));
    assert_eq!(place(&layers, "dev"), None);
    assert_eq!(place(&layers, "transportation"), None);
}
