//! `self-test`: the suite proves itself on the reference server. A clean server must pass every
//! clause; each deliberate defect (`mock_server::Defect`) must fail the clause it breaks, with
//! only that clause's scenarios run, and that clause must have passed in the clean run: a failure
//! the clean server has too is not the defect's. A defect no scenario catches is a hole in the
//! suite. Each allowed variant (`mock_server::Variant`) must be certified at the seed level with
//! its own clause checked and passed, not skipped.

use std::io;
use std::path::Path;

#[cfg(feature = "embedded")]
use crate::report::{Report, Status};
use crate::runner::Outcome;

#[cfg(not(feature = "embedded"))]
pub fn run<Out: io::Write + 'static>(
    _: Option<&Path>,
    _: Option<&Path>,
    _: bool,
    _: usize,
    _: Out,
) -> anyhow::Result<Outcome> {
    anyhow::bail!("self-test needs the reference server: build with the `embedded` feature")
}

/// One run of the self-test, each against its own embedded server.
#[cfg(feature = "embedded")]
#[derive(Debug, Clone, Copy)]
enum Job {
    Clean,
    Variant(mock_server::Variant),
    Defect(mock_server::Defect),
    /// Three reference servers that share nothing, named as one deployment's replicas.
    ReplicasApart,
    /// Three reference servers on one Redis (a redis-server the self-test starts): one server.
    ReplicasOnRedis,
}

#[cfg(feature = "embedded")]
impl Job {
    fn name(self) -> &'static str {
        match self {
            Job::Clean => "clean server",
            Job::Variant(v) => v.name(),
            Job::Defect(d) => d.name(),
            Job::ReplicasApart => "three replicas sharing nothing",
            Job::ReplicasOnRedis => "three replicas on one Redis",
        }
    }
}

/// Runs `jobs` on `lanes` threads at once and gives back their results in the jobs' order, so
/// the tables do not depend on which run ended first. Each run has its own server, port, runtime
/// and random canaries, so runs side by side cannot see each other's traffic; they mostly wait
/// (deadlines, rate windows), which is why two lanes on two cores take about half the time.
#[cfg(any(feature = "embedded", test))]
fn run_lanes<J: Copy + Send + Sync, T: Send>(
    jobs: &[J],
    lanes: usize,
    run: &(dyn Fn(J) -> anyhow::Result<T> + Sync),
    mut done: impl FnMut(usize, J, &anyhow::Result<T>),
) -> Vec<anyhow::Result<T>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut results: Vec<Option<anyhow::Result<T>>> = jobs.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        for _ in 0..lanes.clamp(1, jobs.len().max(1)) {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&job) = jobs.get(i) else { break };
                    if tx.send((i, run(job))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (finished, (i, result)) in rx.iter().enumerate() {
            done(finished + 1, jobs[i], &result);
            results[i] = Some(result);
        }
    });
    // Every lane sends each job it takes before the channel closes; a lane that panicked is
    // re-raised by the scope above, so no slot is left empty here.
    results.into_iter().map(|r| r.unwrap_or_else(|| Err(anyhow::anyhow!("a run did not finish")))).collect()
}

#[cfg(feature = "embedded")]
pub fn run<Out: io::Write + 'static>(
    markdown: Option<&Path>,
    features: Option<&Path>,
    full: bool,
    lanes: usize,
    mut console: Out,
) -> anyhow::Result<Outcome> {
    use std::fmt::Write as _;

    use crate::context::RunOptions;
    use crate::features::FeatureSource;

    if let Some(path) = markdown {
        crate::report::create_parent(path)?;
    }
    let source = FeatureSource::choose(features);
    let run_profile = |profile: crate::profile::Profile,
                       options: RunOptions,
                       tags: Option<&str>|
     -> anyhow::Result<Report> {
        let mut argv = vec!["self-test", "--color", "never"];
        if let Some(tags) = tags {
            argv.extend(["--tags", tags]);
        }
        let opts = <crate::runner::CucumberOpts<cucumber::cli::Empty> as clap::Parser>::try_parse_from(argv)?;
        let outputs = crate::runner::Outputs { console: io::sink(), junit: None, cucumber_json: None };
        crate::runner::run_profile(profile, options, source.clone(), opts, outputs)
    };
    let run_with = |defects: &[mock_server::Defect], tags: Option<&str>| -> anyhow::Result<Report> {
        let (_server, mut profile) = crate::embedded::start(defects, &[])?;
        // The reference server makes every reference choice: it is held to the full level.
        profile.level = crate::report::Level::Full;
        run_profile(profile, RunOptions { require_all: tags.is_none(), run_anyway: false }, tags)
    };
    let run_variant = |variant: mock_server::Variant| -> anyhow::Result<Report> {
        let (_server, mut profile) = crate::embedded::start(&[], &[variant])?;
        // Certified at the seed level, as a third party making these choices would be. The control
        // API stays: without it the variant's own clause could be skipped (PAG-4's walks during
        // arrivals, AUTH-7's revocation), and a skipped clause proves nothing.
        profile.level = crate::report::Level::Seed;
        run_profile(profile, RunOptions::default(), None)
    };
    // A deployment of three references that share nothing: each client's calls go to them in
    // turn, so what one call leaves the next cannot find. Held to the full level, as the reference.
    // `None` on Redis when no redis-server can be started here: the row says so, it proves nothing.
    let run_replicas = |redis: Option<&str>| -> anyhow::Result<Report> {
        let mut servers = Vec::new();
        let mut endpoints = Vec::new();
        let mut capture = None;
        for _ in 0..3 {
            let (server, profile) = crate::embedded::start_with(&[], &[], redis, capture.clone())?;
            capture = profile.capture.clone();
            endpoints.push(profile.endpoint.clone().unwrap_or_default());
            servers.push((server, profile));
        }
        let mut profile = servers[0].1.clone();
        profile.replicas = endpoints;
        profile.level = crate::report::Level::Full;
        run_profile(profile, RunOptions::default(), None)
    };
    let run_job = |job: Job| -> anyhow::Result<Report> {
        match job {
            Job::Clean => run_with(&[], None),
            Job::ReplicasApart => run_replicas(None),
            Job::ReplicasOnRedis => {
                let redis = RedisServer::start()?;
                run_replicas(Some(&redis.url))
            }
            Job::Variant(variant) => run_variant(variant),
            Job::Defect(defect) => {
                // Without --full only the defect's own clause runs: quick, and enough to prove
                // the kill.
                let tags = (!full).then(|| format!("@{}", defect.clause()));
                run_with(&[defect], tags.as_deref())
            }
        }
    };

    // The whole runs first (the clean server, each variant), the short defect runs after: the
    // last runs to end are then short ones, not a whole run going on alone.
    let jobs: Vec<Job> = std::iter::once(Job::Clean)
        .chain([Job::ReplicasApart, Job::ReplicasOnRedis])
        .chain(mock_server::Variant::ALL.iter().copied().map(Job::Variant))
        .chain(mock_server::Defect::ALL.iter().copied().map(Job::Defect))
        .collect();
    let total = jobs.len();
    let _ = writeln!(console, "{total} runs, {} at a time", lanes.clamp(1, total));
    let mut results = run_lanes(&jobs, lanes, &run_job, |finished, job, result| {
        let how = if result.is_ok() { "done" } else { "could not run" };
        let _ = writeln!(console, "[{finished:>3}/{total}] {how}: {}", job.name());
    })
    .into_iter();
    let clean = results.next().expect("the clean run is the first job")?;
    let apart = results.next().expect("the deployment run is the second job")?;
    let on_redis = results.next().expect("the Redis deployment run is the third job");
    let mut variant_reports = Vec::new();
    for _ in mock_server::Variant::ALL {
        variant_reports.push(results.next().expect("one result per variant")?);
    }
    let defect_reports = results.collect::<anyhow::Result<Vec<Report>>>()?;

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
    for (defect, report) in mock_server::Defect::ALL.iter().zip(&defect_reports) {
        let failed: Vec<&str> = report
            .clauses
            .iter()
            .filter(|c| c.full_status == Status::Failed)
            .map(|c| c.id.as_str())
            .collect();
        let clause = report.clauses.iter().find(|c| c.id == defect.clause());
        let killed = caught(defect.clause(), report, &clean);
        // Caught at the seed level too, or only by a check of this project's choices.
        let level = match clause {
            Some(c) if c.status == Status::Failed && !c.ext() => "seed",
            _ => "full",
        };
        let by = clause.and_then(|c| c.full_reason.clone().or_else(|| c.reason.clone())).unwrap_or_default();
        let by = crate::text::table_cell(&by, 140);
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

    // The other half of the proof: servers that make another choice the seed allows must be
    // certified (no false failures), and the suite must still notice the difference at the full
    // level where it is not a matter of timing.
    md.push_str(
        "\n## Acceptance matrix: every allowed variant of the reference server certified at the seed level\n\n",
    );
    md.push_str("| variant | clause | what it changes | seed level | skipped | as expected | differs at the full level |\n|---|---|---|---|---|---|---|\n");
    let mut rejected = Vec::new();
    for (variant, report) in mock_server::Variant::ALL.iter().zip(&variant_reports) {
        let verdict = acceptance(variant.name(), report);
        let differs = report.summary.ext_differences.join(", ");
        let seed = if report.summary.certified { "certified" } else { "not certified" };
        let skipped = skipped(report);
        let _ = writeln!(
            md,
            "| {} | {} | {} | {seed} | {skipped} | {} | {differs} |",
            variant.name(),
            variant.clause(),
            variant.description(),
            match &verdict {
                Ok(why) => format!("✅ {why}"),
                Err(why) => format!("❌ {}", crate::text::escape_pipes(why)),
            }
        );
        let _ = writeln!(
            console,
            "{:<30} {:<13} {:<9} skipped: {skipped:<4} full level differs: {differs}",
            variant.name(),
            seed,
            if verdict.is_ok() { "expected" } else { "WRONG" },
        );
        if let Err(why) = verdict {
            rejected.push(format!("{}: {why}", variant.name()));
        }
    }
    // A deployment whose replicas share nothing must not be certified, and fail under a clause
    // whose rule spans calls: the suite sees replicas disagree.
    md.push_str("\n## Deployment rows: replicas named in the profile\n\n");
    md.push_str(
        "| deployment | expected | verdict | as expected | clauses failed |\n|---|---|---|---|---|\n",
    );
    let apart_failed: Vec<&str> =
        apart.clauses.iter().filter(|c| c.full_status == Status::Failed).map(|c| c.id.as_str()).collect();
    let apart_ok = apart.exit_code(true) == 1 && apart_failed.iter().any(|id| SPANNING.contains(id));
    let _ = writeln!(
        md,
        "| three references sharing nothing | not certified, under a clause spanning calls | {} | {} | {} |",
        if apart.summary.certified { "certified" } else { "not certified" },
        if apart_ok { "✅" } else { "❌" },
        apart_failed.join(", ")
    );
    let _ = writeln!(
        console,
        "three replicas sharing nothing: {} (failed: {})",
        if apart_ok { "not certified, as expected" } else { "WRONG" },
        apart_failed.join(" ")
    );

    let (redis_verdict, redis_ok, redis_failed) = match &on_redis {
        Ok(report) => {
            let failed: Vec<&str> = report
                .clauses
                .iter()
                .filter(|c| c.full_status == Status::Failed)
                .map(|c| c.id.as_str())
                .collect();
            let ok = report.exit_code(false) == 0;
            (if ok { "certified" } else { "not certified" }.to_owned(), ok, failed.join(", "))
        }
        // No redis-server here: not run, and no verdict either way.
        Err(e) if e.to_string() == NO_REDIS => (format!("not run: {e:#}"), true, String::new()),
        Err(e) => (format!("could not run: {e:#}"), false, String::new()),
    };
    let _ = writeln!(
        md,
        "| three references on one Redis | certified at the full level | {redis_verdict} | {} | {redis_failed} |",
        if redis_ok { "✅" } else { "❌" }
    );
    let _ = writeln!(console, "three replicas on one Redis: {redis_verdict}");
    if let Some(path) = markdown {
        write_below_marker(path, &md)?;
    }
    let code =
        if clean_ok && apart_ok && redis_ok && survivors.is_empty() && rejected.is_empty() { 0 } else { 1 };
    crate::embedded::finish_log(code != 0);
    let mut problems = Vec::new();
    if !survivors.is_empty() {
        problems.push(format!("defects no scenario catches: {}", survivors.join(", ")));
    }
    if !rejected.is_empty() {
        problems.push(format!("allowed variants judged wrongly: {}", rejected.join("; ")));
    }
    if !apart_ok {
        problems
            .push("three replicas sharing nothing were not failed under a clause spanning calls".to_owned());
    }
    let error = (!problems.is_empty()).then(|| problems.join("; "));
    Ok(Outcome { code, error, report: Some(clean) })
}

/// Why the Redis deployment row did not run: no redis-server on this machine.
#[cfg(feature = "embedded")]
const NO_REDIS: &str = "no redis-server to start";

/// A redis-server child on a free port, without persistence, killed when dropped.
#[cfg(feature = "embedded")]
struct RedisServer {
    child: std::process::Child,
    url: String,
}

#[cfg(feature = "embedded")]
impl RedisServer {
    fn start() -> anyhow::Result<RedisServer> {
        use anyhow::Context as _;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .context(NO_REDIS)?;
        let server = RedisServer { child, url: format!("redis://127.0.0.1:{port}") };
        // Up when it accepts a connection: 5 s at most.
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(server);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        anyhow::bail!("redis-server on port {port} did not accept a connection within 5 s")
    }
}

#[cfg(feature = "embedded")]
impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The clauses whose rules span calls (a key, a version, a cursor, a window, a revocation), which
/// replicas that share nothing break (issue 41).
#[cfg(feature = "embedded")]
const SPANNING: [&str; 9] =
    ["IDEM-3", "IDEM-4", "PRE-4", "PAG-4", "PAG-5", "PAG-6", "LIM-2", "AUTH-7", "IDEM-2"];

/// Whether the run of a defect caught it: the defect's clause failed there and passed in the
/// clean run of the same build, so the failure is one the defect caused (a clause failing on the
/// clean server too, a flaky scenario say, proves nothing about the defect).
#[cfg(feature = "embedded")]
fn caught(clause: &str, defect_run: &Report, clean: &Report) -> bool {
    let status = |report: &Report| report.clauses.iter().find(|c| c.id == clause).map(|c| c.full_status);
    status(defect_run) == Some(Status::Failed) && status(clean) == Some(Status::Passed)
}

/// The acceptance table's skipped count: the required clauses skipped, and those no scenario ran.
#[cfg(feature = "embedded")]
fn skipped(report: &Report) -> String {
    match report.summary.not_run {
        0 => report.summary.skipped.to_string(),
        n => format!("{} (+{n} not run)", report.summary.skipped),
    }
}

/// Variants whose difference the full level must notice whatever the timing (the rate-window
/// variants may or may not differ, depending on where a minute boundary falls).
#[cfg(feature = "embedded")]
const NOTICED_AT_FULL: &[(&str, &str)] = &[
    ("lifecycle-skip-forward", "PRE-3"),
    ("error-extra-fields", "AUTH-4"),
    ("no-membership-forbidden", "AUTH-7"),
    ("access-before-schema", "AUTH-8"),
    ("oldest-first", "PAG-4"),
    ("transition-mismatch-code", "PRE-3"),
    ("transition-validation-code", "PRE-3"),
    ("message-limit-clamp", "PAG-8"),
    ("repeats-as-once", "LIM-1"),
    ("utf16-lengths", "IDEM-1"),
];

/// The variant that answers with another data shape: ENV-7 must fail alone.
#[cfg(feature = "embedded")]
const SHAPE_VARIANT: &str = "bare-order-data";

/// Whether a variant's report is what the contract says it should be, and why.
#[cfg(feature = "embedded")]
fn acceptance(variant: &str, report: &Report) -> Result<String, String> {
    let failed: Vec<&str> =
        report.clauses.iter().filter(|c| c.status == Status::Failed).map(|c| c.id.as_str()).collect();
    if variant == SHAPE_VARIANT {
        let blocked: Vec<&str> =
            report.clauses.iter().filter(|c| c.status == Status::Blocked).map(|c| c.id.as_str()).collect();
        return if failed == ["ENV-7"] {
            Ok(format!("only ENV-7 failed; blocked: {}", blocked.join(", ")))
        } else {
            Err(format!("expected ENV-7 alone to fail, failed: {}", failed.join(", ")))
        };
    }
    if !report.summary.certified {
        return Err(format!("not certified at the seed level; failed: {}", failed.join(", ")));
    }
    // Certified with its own clause skipped would prove nothing about the reading it takes.
    let own = mock_server::Variant::parse(variant).map(|v| v.clause()).unwrap_or_default();
    match report.clauses.iter().find(|c| c.id == own) {
        Some(c) if c.status == Status::Passed => {}
        Some(c) => {
            return Err(format!(
                "its clause {own} was not checked and passed at the seed level: {}{}",
                c.status.as_str(),
                c.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
            ));
        }
        None => return Err(format!("names no clause of the contract ({own:?})")),
    }
    if let Some((_, clause)) = NOTICED_AT_FULL.iter().find(|(v, _)| *v == variant)
        && !report.summary.ext_differences.iter().any(|c| c == clause)
    {
        return Err(format!("the full level did not notice the difference under {clause}"));
    }
    Ok(format!("certified, {own} passed"))
}

/// Above this line a kill-matrix file is written by hand (docs/KILL_MATRIX.md: how it is made, and
/// which plausible bugs each clause's scenarios would miss); below it, by `self-test --markdown`.
pub const GENERATED_MARKER: &str =
    "<!-- Generated by `chataigne-conformance self-test --markdown`: edit above this line. -->";

/// Writes `generated` below the marker of `path`, keeping what is above it; a file without the
/// marker is replaced whole.
#[cfg(any(feature = "embedded", test))]
fn write_below_marker(path: &Path, generated: &str) -> anyhow::Result<()> {
    let kept = std::fs::read_to_string(path)
        .ok()
        .and_then(|old| old.find(GENERATED_MARKER).map(|at| old[..at].to_owned()))
        .unwrap_or_default();
    let text = if kept.is_empty() {
        generated.to_owned()
    } else {
        format!("{kept}{GENERATED_MARKER}\n\n{generated}")
    };
    std::fs::write(path, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod marker_tests {
    use super::*;

    #[test]
    fn runs_side_by_side_come_back_in_the_jobs_order_each_once() {
        // The first jobs take longest, so with several lanes they end last.
        let jobs: Vec<u64> = vec![40, 30, 20, 10, 0, 5];
        for lanes in [1, 3, 16] {
            let mut seen = Vec::new();
            let results = run_lanes(
                &jobs,
                lanes,
                &|ms| {
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                    if ms == 5 { Err(anyhow::anyhow!("job {ms} failed")) } else { Ok(ms * 2) }
                },
                |finished, job, _| seen.push((finished, job)),
            );
            let got: Vec<Option<u64>> = results.iter().map(|r| r.as_ref().ok().copied()).collect();
            assert_eq!(got, [Some(80), Some(60), Some(40), Some(20), Some(0), None], "{lanes} lanes");
            let mut ran: Vec<u64> = seen.iter().map(|(_, job)| *job).collect();
            ran.sort_unstable();
            assert_eq!(ran, [0, 5, 10, 20, 30, 40], "{lanes} lanes: each job once");
            assert_eq!(seen.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6]);
        }
    }

    #[test]
    fn the_hand_written_part_survives_a_regeneration() {
        let dir = std::env::temp_dir().join(format!("kill-matrix-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("KILL_MATRIX.md");
        std::fs::write(&path, format!("# Review\n\nby hand\n\n{GENERATED_MARKER}\n\nold matrix\n")).unwrap();
        write_below_marker(&path, "new matrix\n").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("# Review\n\nby hand\n\n{GENERATED_MARKER}\n\nnew matrix\n"));
        let bare = dir.join("bare.md");
        write_below_marker(&bare, "only this\n").unwrap();
        assert_eq!(std::fs::read_to_string(&bare).unwrap(), "only this\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(all(test, feature = "embedded"))]
mod tests {
    use super::*;
    use crate::report::{Level, ReportHeader, ScenarioResult};

    fn scenario(clause: &str, status: Status) -> ScenarioResult {
        ScenarioResult {
            feature: "features/rate_limits.feature".to_owned(),
            name: format!("{clause} {}", status.as_str()),
            line: 1,
            status,
            skip_reason: (status == Status::Skipped).then(|| "needs control API".to_owned()),
            failed_step: (status == Status::Failed).then(|| "Then the call fails".to_owned()),
            message: None,
            ext_choices: Vec::new(),
            ext_differences: Vec::new(),
            request_ids: Vec::new(),
            exchanges: 1,
            not_applicable: false,
            cut_short: false,
            timing: None,
            tags: vec![clause.to_owned()],
            last_exchange: None,
        }
    }

    fn report(level: Level, scenarios: &[ScenarioResult]) -> Report {
        let header = ReportHeader { level, ..Default::default() };
        Report::build(scenarios, &[], &Default::default(), header, Vec::new())
    }

    #[test]
    fn a_variant_is_accepted_only_when_its_own_clause_was_checked_and_passed() {
        let others = || vec![scenario("ENV-1", Status::Passed), scenario("PAG-1", Status::Passed)];
        let with = |own: &[Status]| {
            let mut all = others();
            all.extend(own.iter().map(|s| scenario("LIM-2", *s)));
            report(Level::Seed, &all)
        };
        assert_eq!(
            acceptance("token-bucket", &with(&[Status::Passed])),
            Ok("certified, LIM-2 passed".to_owned())
        );
        // Certified at the seed level, yet LIM-2 never ran, or ran only in part.
        for own in [&[][..], &[Status::Skipped], &[Status::Passed, Status::Skipped]] {
            let report = with(own);
            assert!(report.summary.certified, "{own:?}");
            let verdict = acceptance("token-bucket", &report);
            assert!(
                verdict.as_ref().is_err_and(|e| e.contains("LIM-2 was not checked and passed")),
                "{own:?}: {verdict:?}"
            );
        }
        assert!(acceptance("token-bucket", &with(&[Status::Failed])).is_err());
    }

    #[test]
    fn a_defect_is_caught_only_by_a_failure_the_clean_run_did_not_have() {
        let run = |status: Status| report(Level::Full, &[scenario("PAG-4", status)]);
        assert!(caught("PAG-4", &run(Status::Failed), &run(Status::Passed)));
        // Failing on the clean server too (a flaky or broken scenario), or not checked there.
        assert!(!caught("PAG-4", &run(Status::Failed), &run(Status::Failed)));
        assert!(!caught("PAG-4", &run(Status::Failed), &run(Status::Skipped)));
        assert!(!caught("PAG-4", &run(Status::Passed), &run(Status::Passed)));
        assert!(!caught("PAG-3", &run(Status::Failed), &run(Status::Passed)), "another clause's failure");
    }

    #[test]
    fn the_acceptance_table_counts_skipped_clauses() {
        let r = report(Level::Seed, &[scenario("LIM-2", Status::Skipped), scenario("PAG-1", Status::Passed)]);
        assert_eq!(r.summary.skipped, 1);
        assert_eq!(skipped(&r), format!("1 (+{} not run)", r.summary.not_run));
    }
}
