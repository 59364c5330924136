//! The reference server's layer rule, kept (as `suite/tests/it/layers.rs` keeps the suite's, with
//! the same reader, `chataigne-layer-rule`): every `crate::` or `super::` path in a module of
//! `mock-server/src` points to a module listed before it in ARCHITECTURE.md's line "Layers of
//! `mock-server/src`, bottom first" (no import circle, no upward import, every module placed).
//! And no module but `app`, `router` and the `dev::` ones names a `dev::` path: the healthy
//! layers ask the development parts through `App`'s values.

use std::path::PathBuf;

use chataigne_layer_rule as rule;

#[test]
fn every_module_uses_only_the_layers_below_it() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(root.join("../ARCHITECTURE.md")).unwrap();
    let layers = rule::layers(&map, "Layers of `mock-server/src`, bottom first").expect("the layer line");
    let dev_rule = |module: &str, used: &str| {
        let dev_only = used.starts_with("dev::") || used == "dev";
        let composes = module == "app" || module == "router" || module.starts_with("dev::");
        (dev_only && !composes).then(|| "only app, router and dev name dev".to_owned())
    };
    let found = rule::check(&root.join("src"), &layers, dev_rule).unwrap();
    assert!(
        found.unplaced.is_empty(),
        "modules missing from ARCHITECTURE.md's layer line: {:?}",
        found.unplaced
    );
    assert!(
        found.wrong.is_empty(),
        "imports that point up or sideways (ARCHITECTURE.md, mock-server layers):\n{}",
        found.wrong.join("\n")
    );
}
