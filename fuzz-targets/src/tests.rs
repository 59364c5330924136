use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use super::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// The files of `dir/<target>/` for every target, sorted; a folder named after no target is an
/// error (its inputs would never be replayed).
fn inputs(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some((target, _)) = TARGETS.iter().find(|(t, _)| *t == name) else {
            panic!("{}: no fuzz target is named {name:?}", dir.display());
        };
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
        files.sort();
        found.extend(files.into_iter().map(|f| (*target, f)));
    }
    found
}

/// Runs every input through `run` (its target's body); the inputs that panicked, with the panic.
fn replay(inputs: &[(&str, PathBuf)], run: &dyn Fn(&str, &[u8])) -> Vec<String> {
    inputs
        .iter()
        .filter_map(|(target, file)| {
            let data = std::fs::read(file).unwrap();
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| run(target, &data)));
            outcome.err().map(|panic| {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                format!("{target} {}: {why}", file.display())
            })
        })
        .collect()
}

/// The target's own body.
fn body(target: &str, data: &[u8]) {
    let (_, run) = TARGETS.iter().find(|(t, _)| *t == target).expect("a known target");
    run(data)
}

/// Every crash input cargo-fuzz ever saved (fuzz/regressions/<target>/) still runs clean: the
/// fuzz crate is built by nightly only, so this is where CI replays them.
#[test]
fn every_regression_input_replays_clean() {
    let inputs = inputs(&fuzz_dir().join("regressions"));
    assert!(!inputs.is_empty(), "no input under fuzz/regressions: nothing would be replayed");
    let failed = replay(&inputs, &body);
    assert!(
        failed.is_empty(),
        "{} of {} regression inputs fail:\n{}",
        failed.len(),
        inputs.len(),
        failed.join("\n")
    );
}

/// The committed seeds (fuzz/corpus/<target>/) run clean too, and every target has some.
#[test]
fn every_seed_input_replays_clean() {
    let inputs = inputs(&fuzz_dir().join("corpus"));
    for (target, _) in TARGETS {
        assert!(inputs.iter().any(|(t, _)| t == target), "no seed for {target} under fuzz/corpus");
    }
    let failed = replay(&inputs, &body);
    assert!(failed.is_empty(), "{} of {} seeds fail:\n{}", failed.len(), inputs.len(), failed.join("\n"));
}

/// The replay is no formality: an input whose body panics is reported with its file, and a folder
/// of inputs named after no target is refused rather than skipped.
#[test]
fn a_failing_input_and_an_unknown_folder_are_reported() {
    let dir = std::env::temp_dir().join(format!("chataigne-fuzz-replay-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("cursor_decode")).unwrap();
    std::fs::write(dir.join("cursor_decode/ok"), b"fine").unwrap();
    std::fs::write(dir.join("cursor_decode/crash"), b"boom").unwrap();
    let found = inputs(&dir);
    let failed = replay(&found, &|_, data| assert_ne!(data, b"boom", "the body fails on this input"));
    assert_eq!(found.len(), 2);
    assert!(
        matches!(failed.as_slice(), [one] if one.contains("crash") && one.contains("the body fails")),
        "{failed:?}"
    );
    std::fs::create_dir_all(dir.join("no_such_target")).unwrap();
    let refused = std::panic::catch_unwind(|| inputs(&dir)).is_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(refused, "a folder of inputs no target replays must fail the test");
}
