//! The suite's layer rule, kept (with the reader `mock-server/tests/it/layers.rs` uses,
//! `chataigne-layer-rule`): every `crate::` or `super::` path in a module of `suite/src` points to
//! a module listed before it in ARCHITECTURE.md's line "Layers of `suite/src`, bottom first", so
//! there is no import circle and no upward import, and the map stays true (a new module must be
//! placed in it).

use std::path::PathBuf;

use chataigne_layer_rule as rule;

#[test]
fn every_module_uses_only_the_layers_below_it() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(root.join("../ARCHITECTURE.md")).unwrap();
    let layers = rule::layers(&map, "Layers of `suite/src`, bottom first").expect("the layer line");
    let found = rule::check(&root.join("src"), &layers, |_, _| None).unwrap();
    assert!(
        found.unplaced.is_empty(),
        "modules missing from ARCHITECTURE.md's layer line: {:?}",
        found.unplaced
    );
    assert!(
        found.wrong.is_empty(),
        "imports that point up or sideways (ARCHITECTURE.md, suite layers):\n{}",
        found.wrong.join("\n")
    );
}

/// The modules of `suite/src/fuzz` and the fuzz modules each names in its code (tests left out,
/// as the layer rule does): `super::x`, `crate::fuzz::x` and, in `mod.rs`, `self::x`; an item of
/// `mod.rs` itself (`super::Engine`) is the module `fuzz`.
fn fuzz_imports(
    dir: &std::path::Path,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let stem = |p: &std::path::Path| p.file_stem().unwrap().to_string_lossy().into_owned();
    let files: Vec<PathBuf> =
        rule::sources(dir).unwrap().into_iter().filter(|p| p.parent() == Some(dir)).collect();
    let modules: std::collections::BTreeSet<String> =
        files.iter().map(|p| stem(p)).map(|m| if m == "mod" { "fuzz".to_owned() } else { m }).collect();
    let mut graph = std::collections::BTreeMap::new();
    for file in &files {
        let module = match stem(file).as_str() {
            "mod" => "fuzz".to_owned(),
            m => m.to_owned(),
        };
        let text = std::fs::read_to_string(file).unwrap();
        // The layer rule's reader resolves `super::` and groups; `self::` of mod.rs reads as
        // `super::` of a child.
        let (as_module, text) = if module == "fuzz" {
            ("fuzz::mod".to_owned(), text.replace("self::", "super::"))
        } else {
            (format!("fuzz::{module}"), text)
        };
        let used: std::collections::BTreeSet<String> = rule::uses(&text, &as_module)
            .into_iter()
            .filter_map(|path| {
                let rest = path.strip_prefix("fuzz::").or((path == "fuzz").then_some(""))?;
                let first = rest.split("::").next().unwrap_or_default();
                Some(if modules.contains(first) && first != "fuzz" {
                    first.to_owned()
                } else {
                    "fuzz".to_owned()
                })
            })
            .filter(|m| *m != module)
            .collect();
        graph.insert(module, used);
    }
    graph
}

/// A cycle of `graph`, if it has one: the modules around it.
fn cycle(
    graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Option<Vec<String>> {
    fn visit(
        at: &str,
        graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|m| m == at) {
            let mut around = path[i..].to_vec();
            around.push(at.to_owned());
            return Some(around);
        }
        if done.contains(at) {
            return None;
        }
        path.push(at.to_owned());
        for next in graph.get(at).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(at.to_owned());
        None
    }
    let mut done = std::collections::BTreeSet::new();
    graph.keys().find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

/// The fuzz modules form layers (ARCHITECTURE.md, "Layers of `suite/src/fuzz`"): no module
/// imports one that imports it back, however far round.
#[test]
fn the_fuzz_modules_import_one_another_without_a_circle() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/fuzz");
    let graph = fuzz_imports(&dir);
    assert!(graph.len() > 10 && graph.values().any(|used| !used.is_empty()), "{graph:?}");
    assert_eq!(cycle(&graph), None, "an import circle among the fuzz modules: {graph:#?}");
}

#[test]
fn a_circle_is_found_however_far_round() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g = std::collections::BTreeMap::<String, std::collections::BTreeSet<String>>::new();
        for (a, b) in edges {
            g.entry((*a).to_owned()).or_default().insert((*b).to_owned());
            g.entry((*b).to_owned()).or_default();
        }
        g
    };
    assert_eq!(cycle(&graph(&[("a", "b"), ("b", "c")])), None);
    assert_eq!(cycle(&graph(&[("a", "b"), ("b", "c"), ("c", "a")])).map(|c| c.len()), Some(4));
    assert!(cycle(&graph(&[("report", "transcript"), ("transcript", "report")])).is_some());
}
