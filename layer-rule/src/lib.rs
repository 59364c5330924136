//! The layer rule of ARCHITECTURE.md, read from the code: every `crate::` or `super::` path in a
//! module under `src` points to a module listed before it (or to its own entry) on the crate's
//! line "Layers of `…`, bottom first", so there is no import circle and no upward import, and the
//! map stays true (a new module must be placed in it). An entry may be a submodule
//! (`dev::oauth`): a file belongs to the longest entry that is its module or one of its ancestors.
//! Shared by the layer tests of mock-server and suite, so the two cannot read code differently.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layers ARCHITECTURE.md (`map`) lists on the paragraph starting with `heading`, bottom
/// first, after the paragraph's first "):". `None`: no such paragraph.
pub fn layers(map: &str, heading: &str) -> Option<Vec<String>> {
    let start = map.find(heading)?;
    let paragraph = &map[start..map[start..].find("\n\n").map_or(map.len(), |end| start + end)];
    let list = &paragraph[paragraph.find("):")? + 2..];
    Some(list.split(',').map(|m| m.trim().trim_matches(['`', '.', ' ', '\n'].as_ref()).to_owned()).collect())
}

/// Every `.rs` file under `dir`, sorted.
pub fn sources(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            out.extend(sources(&path)?);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// The module path of a file under `src`: `dev/oauth.rs` → `dev::oauth`, `tools/mod.rs` →
/// `tools`.
pub fn module_of(rel: &Path) -> String {
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
pub fn place(layers: &[String], path: &str) -> Option<usize> {
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
pub fn uses(text: &str, module: &str) -> BTreeSet<String> {
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

/// What [`check`] found.
#[derive(Debug, Default)]
pub struct Findings {
    /// Modules that are on no entry of the layer line.
    pub unplaced: BTreeSet<String>,
    /// `file (module) uses crate::path` for each path that points up or sideways, and what
    /// `extra` refused.
    pub wrong: Vec<String>,
}

/// Every module under `src` against `layers`; `extra(module, used)` adds a crate's own rule
/// (`Some(why)`: the use is wrong). The crate root (`lib.rs`, `main.rs`) composes everything
/// and a `tests.rs` is a `#[cfg(test)]` module: both are left out.
pub fn check(
    src: &Path,
    layers: &[String],
    extra: impl Fn(&str, &str) -> Option<String>,
) -> std::io::Result<Findings> {
    let mut findings = Findings::default();
    for file in sources(src)? {
        let Ok(rel) = file.strip_prefix(src) else { continue };
        let module = module_of(rel);
        if module == "lib" || module == "main" || rel.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let rank = place(layers, &module);
        // A parent whose children are placed one by one (`dev`) holds no code of its own.
        let parent_only = rank.is_none() && layers.iter().any(|l| l.starts_with(&format!("{module}::")));
        if rank.is_none() && !parent_only {
            findings.unplaced.insert(module);
            continue;
        }
        for used in uses(&std::fs::read_to_string(&file)?, &module) {
            if let Some(why) = extra(&module, &used) {
                findings.wrong.push(format!("{} uses crate::{used}: {why}", rel.display()));
            }
            match (place(layers, &used), rank) {
                (Some(r), Some(own)) if r <= own => {}
                _ => findings.wrong.push(format!("{} ({module}) uses crate::{used}", rel.display())),
            }
        }
    }
    Ok(findings)
}

#[cfg(test)]
mod tests {
    use super::{layers, place, uses};

    #[test]
    fn the_reader_sees_grouped_nested_and_relative_paths() {
        let text = "use crate::{auth::Principal, transport::{self, http}, world};\n\
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
                "world",
                "y"
            ]
        );
    }

    #[test]
    fn a_path_belongs_to_its_longest_entry() {
        let layers: Vec<String> = ["state", "dev::oauth", "app", "transport"].map(String::from).to_vec();
        assert_eq!(place(&layers, "dev::oauth::OAuth"), Some(1));
        assert_eq!(place(&layers, "state::store::Key"), Some(0));
        assert_eq!(place(&layers, "dev"), None);
        assert_eq!(place(&layers, "transportation"), None);
    }

    #[test]
    fn the_layer_line_is_read_after_its_parenthesis() {
        let map = "# Map\n\nLayers of `x/src`, bottom first (each uses only those before it): `a`, `b::c`,\n`d`.\n\nNext.";
        assert_eq!(
            layers(map, "Layers of `x/src`, bottom first"),
            Some(vec!["a".into(), "b::c".into(), "d".into()])
        );
        assert_eq!(layers(map, "Layers of `y/src`"), None);
    }
}
