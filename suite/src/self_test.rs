//! `self-test`: the suite proves itself on the reference server. A clean server must pass every
//! clause; each deliberate defect (`mock_server::Defect`) must fail the clause it breaks, with
//! only that clause's scenarios run. A defect no scenario catches is a hole in the suite.

use std::io;
use std::path::Path;

use crate::cli::Outcome;
#[cfg(feature = "embedded")]
use crate::report::{Report, Status};

#[cfg(not(feature = "embedded"))]
pub fn run<Out: io::Write + 'static>(
    _: Option<&Path>,
    _: Option<&Path>,
    _: bool,
    _: Out,
) -> anyhow::Result<Outcome> {
    anyhow::bail!("self-test needs the reference server: build with the `embedded` feature")
}

#[cfg(feature = "embedded")]
pub fn run<Out: io::Write + 'static>(
    markdown: Option<&Path>,
    features: Option<&Path>,
    full: bool,
    mut console: Out,
) -> anyhow::Result<Outcome> {
    use std::fmt::Write as _;

    use crate::features::FeatureSource;

    if let Some(path) = markdown {
        crate::cli::create_parent(path)?;
    }
    let source = FeatureSource::choose(features);
    let run_with = |defects: &[mock_server::Defect], tags: Option<&str>| -> anyhow::Result<Report> {
        let (_server, mut profile) = crate::embedded::start(defects)?;
        // The reference server makes every reference choice: it is held to the full level.
        profile.level = crate::report::Level::Full;
        let mut argv = vec!["self-test", "--color", "never"];
        if let Some(tags) = tags {
            argv.extend(["--tags", tags]);
        }
        let opts = <crate::runner::CucumberOpts<cucumber::cli::Empty> as clap::Parser>::try_parse_from(argv)?;
        let outputs = crate::runner::Outputs { console: io::sink(), junit: None, cucumber_json: None };
        crate::cli::run_profile(profile, source.clone(), opts, outputs)
    };

    let clean = run_with(&[], None)?;
    let clean_ok = clean.exit_code(true) == 0;
    let mut md =
        String::from("## Kill matrix: every defect of the reference server caught by its clause\n\n");
    let s = &clean.summary;
    let _ = writeln!(
        md,
        "Clean server: {} ({} passed, {} failed, {} skipped, {} not run).\n",
        if clean_ok { "✅ every clause passed" } else { "❌ not every clause passed" },
        s.passed,
        s.failed,
        s.skipped,
        s.not_run
    );
    let _ = writeln!(
        console,
        "clean server: {}",
        if clean_ok { "every clause passed" } else { "NOT every clause passed" }
    );
    md.push_str(
        "| defect | clause | what it breaks | caught | level | by | clauses failed |\n|---|---|---|---|---|---|---|\n",
    );
    let mut survivors = Vec::new();
    for defect in mock_server::Defect::ALL {
        // Without --full only the defect's own clause runs: quick, and enough to prove the kill.
        let tags = (!full).then(|| format!("@{}", defect.clause()));
        let report = run_with(&[*defect], tags.as_deref())?;
        let failed: Vec<&str> = report
            .clauses
            .iter()
            .filter(|c| c.full_status == Status::Failed)
            .map(|c| c.id.as_str())
            .collect();
        let clause = report.clauses.iter().find(|c| c.id == defect.clause());
        let killed = clause.is_some_and(|c| c.full_status == Status::Failed);
        // Caught at the seed level too, or only by a check of this project's choices.
        let level = match clause {
            Some(c) if c.status == Status::Failed && !c.ext() => "seed",
            _ => "full",
        };
        let by = clause.and_then(|c| c.full_reason.clone().or_else(|| c.reason.clone())).unwrap_or_default();
        let by = crate::client::cut(by.lines().next().unwrap_or_default(), 140).replace('|', "\\|");
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} |",
            defect.name(),
            defect.clause(),
            defect.description(),
            if killed { "✅" } else { "❌ survived" },
            if killed { level } else { "" },
            if killed { by.as_str() } else { "" },
            failed.join(", ")
        );
        let _ = writeln!(
            console,
            "{:<30} {:<8} {:<9} {:<5} failed: {}",
            defect.name(),
            defect.clause(),
            if killed { "caught" } else { "SURVIVED" },
            if killed { level } else { "" },
            failed.join(" ")
        );
        if !killed {
            survivors.push(defect.name());
        }
    }
    let _ = writeln!(
        md,
        "\n{} of {} defects caught.",
        mock_server::Defect::ALL.len() - survivors.len(),
        mock_server::Defect::ALL.len()
    );
    if let Some(path) = markdown {
        std::fs::write(path, &md).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    let code = if clean_ok && survivors.is_empty() { 0 } else { 1 };
    crate::embedded::finish_log(code != 0);
    let error =
        (!survivors.is_empty()).then(|| format!("defects no scenario catches: {}", survivors.join(", ")));
    Ok(Outcome { code, error, report: Some(clean) })
}
