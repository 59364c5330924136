//! The suite's layer rule, kept: every `crate::` path in a module of `suite/src` points to a
//! module listed before it in ARCHITECTURE.md's line "Layers of `suite/src`, bottom first", so
//! there is no import circle and no upward import, and the map stays true (a new module must be
//! placed in it).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The layers as ARCHITECTURE.md lists them, bottom first.
fn layers() -> Vec<String> {
    let map = std::fs::read_to_string(root().join("../ARCHITECTURE.md")).unwrap();
    let start = map.find("Layers of `suite/src`, bottom first").expect("the layer line in ARCHITECTURE.md");
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

/// The top-level modules `text` names through `crate::…` (in `use crate::{a, b::c}` too),
/// outside `#[cfg(test)]` modules: tests may reach anything.
fn uses(text: &str) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let mut found = BTreeSet::new();
    let ident =
        |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for part in group.split(',') {
                found.insert(ident(part.trim()));
            }
        } else {
            found.insert(ident(rest));
        }
    }
    found.retain(|m| !m.is_empty() && m != "self");
    found
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
        let module =
            rel.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned();
        if module == "lib" || module == "main" {
            continue;
        }
        let Some(rank) = layers.iter().position(|l| *l == module) else {
            unplaced.insert(module);
            continue;
        };
        for used in uses(&std::fs::read_to_string(&file).unwrap()) {
            if used == module {
                continue;
            }
            match layers.iter().position(|l| *l == used) {
                Some(r) if r < rank => {}
                _ => wrong.push(format!("{} uses crate::{used}", rel.display())),
            }
        }
    }
    assert!(unplaced.is_empty(), "modules missing from ARCHITECTURE.md's layer line: {unplaced:?}");
    assert!(
        wrong.is_empty(),
        "imports that point up or sideways (ARCHITECTURE.md, suite layers):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_reader_sees_grouped_and_nested_paths() {
    let text = "use crate::{client::Exchange, world};\nfn f() { crate::report::x(); }\n#[cfg(test)]\nmod tests { use crate::cli; }";
    let found: Vec<String> = uses(text).into_iter().collect();
    assert_eq!(found, ["client", "report", "world"]);
}
