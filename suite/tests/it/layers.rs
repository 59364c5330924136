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
