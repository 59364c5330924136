//! Command line: our flags merged with cucumber's own (`--tags`, `--name`, `--concurrency`,
//! `-v`, `--color`, …), the `init` subcommand, and the exit codes:
//! 0 every required clause passed; 1 a clause failed (or, with `--require-all`, was skipped or
//! not run); 2 a configuration or connection error, with a one-line reason on stderr.

use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Parser as _;

use crate::context::RunOptions;
use crate::features::FeatureSource;
use crate::profile::{self, Profile};
use crate::report;
use crate::report::create_parent;
use crate::runner::{CucumberOpts, Outputs};
pub use crate::runner::{Outcome, run_profile};

#[derive(clap::Parser)]
#[command(
    name = "chataigne-conformance",
    version,
    about = "Certify an MCP server against the Chataigne restaurant contract",
    long_about = "Certify an MCP server against the Chataigne restaurant contract.\n\n\
        Exit codes: 0 every required clause passed; 1 a clause failed (or, with --require-all, \
        was skipped or not run); 2 a configuration or connection error.",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: CucumberOpts<RunArgs>,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Write a commented example profile to FILE (or to stdout)
    Init {
        /// Where to write it; refuses to overwrite
        file: Option<PathBuf>,
    },
    /// Prove the suite: the reference server passes every clause, and each of its deliberate
    /// defects fails the clause it breaks (needs the `embedded` feature)
    SelfTest {
        /// Write the kill matrix as Markdown
        #[arg(long, value_name = "FILE")]
        markdown: Option<PathBuf>,
        /// The folder of .feature files [default: as for a run]
        #[arg(long, value_name = "DIR")]
        features: Option<PathBuf>,
        /// Run every scenario against each defect (not only its clause's), so the matrix shows
        /// every clause the defect makes fail
        #[arg(long)]
        full: bool,
        /// How many runs side by side, each against its own server [default: the number of CPUs]
        #[arg(long, value_name = "N")]
        jobs: Option<std::num::NonZeroUsize>,
    },
    /// Fuzz a server: arguments drawn from each tool's published input schema (valid ones and
    /// ones with one mutation), stateful sequences (cursors, idempotency keys, preconditions),
    /// every answer judged by the contract's clauses, each failure shrunk to a minimal
    /// reproduction. Exit 0 no finding, 1 findings, 2 a configuration error (see docs/FUZZ.md)
    Fuzz(FuzzArgs),
    /// Run a fuzz finding's transcript (`fuzz --out DIR` writes them) again: the same calls in
    /// order, each persona's token from the profile, the same oracles. Exit 1 the finding
    /// reproduces, 0 it no longer does, 2 a configuration error
    Replay(ReplayArgs),
}

/// The reference server, started in-process, and what to switch on in it: `run`, `fuzz` and
/// `replay` alike.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Reference {
    /// Use the reference server, started in-process, instead of a profile's server
    #[arg(long, conflicts_with = "profile")]
    pub embedded: bool,
    /// With --embedded: switch on one of the reference server's deliberate defects
    /// (`chataigne-mock defects` lists them), to see how a failure is reported; repeatable
    #[arg(long, value_name = "NAME", requires = "embedded")]
    pub defect: Vec<String>,
    /// With --embedded: switch on one of the reference server's allowed variants (`chataigne-mock
    /// variants` lists them: readings the seed allows that the reference does not pick; none
    /// fails the seed level nor is a fuzz finding); repeatable
    #[arg(long, value_name = "NAME", requires = "embedded")]
    pub variant: Vec<String>,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// The transcript: a `finding-NN-CLAUSE.json` of `fuzz --out`
    pub file: PathBuf,
    /// The profile of the server to replay against
    #[arg(long, value_name = "FILE", conflicts_with = "embedded", required_unless_present = "embedded")]
    pub profile: Option<PathBuf>,
    #[command(flatten)]
    pub reference: Reference,
}

#[derive(Debug, Clone, clap::Args)]
pub struct FuzzArgs {
    /// The profile of the server to fuzz (see `init`). Write tools are fuzzed only if it has a
    /// control API, whose reset then runs before and after
    #[arg(long, value_name = "FILE", conflicts_with = "embedded", required_unless_present = "embedded")]
    pub profile: Option<PathBuf>,
    /// The reference server in-process instead (writes are fuzzed: its state is thrown away)
    #[command(flatten)]
    pub reference: Reference,
    /// The seed of every generated case: the same seed against the same server makes the same
    /// calls and the same findings [default: drawn, and printed]
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// How much to do: a number of calls (`200calls`) or a duration (`60s`)
    #[arg(long, value_name = "BUDGET", default_value_t = crate::fuzz::budget::DEFAULT)]
    pub budget: crate::fuzz::budget::Budget,
    /// Write {seed, calls, findings: [{clause, tool, arguments, request, response, request_id,
    /// reproduction}]} as JSON
    #[arg(long, value_name = "FILE")]
    pub report_json: Option<PathBuf>,
    /// Write a JUnit XML report: a testcase per clause judged (classname the clause), a failed
    /// one per finding with its request, response, request_id and difference
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write the run as one self-contained HTML page: the verdict, every clause judged, each
    /// finding folded with its calls, request, response, request_id and curl lines
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write each finding in DIR: `finding-NN-CLAUSE.json`, the JSON-RPC transcript of its calls
    /// (persona names, never tokens) that `replay` runs again, and `finding-NN-CLAUSE.feature`,
    /// a scenario of the suite's steps to paste into features/
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Which findings fail the run: `seed` (default, or the profile's `level`) leaves out those
    /// under an ext clause (PAG-2's refused `limit`, LIM-7, ENV-2, …): readings the seed allows,
    /// shown as differences from the reference; `full` counts them too
    #[arg(long, value_enum)]
    pub level: Option<profile::Level>,
    /// Draw cases at once. By default, with a duration as the budget and writes allowed, the
    /// rules' scenarios (every clause's derived cases, as `run` has them) run first within the
    /// budget, then cases are drawn for the time left
    #[arg(long)]
    pub no_rules: bool,
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunArgs {
    /// The profile: endpoint or stdio command, persona tokens, ID map, control API (see `init`)
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// The MCP endpoint, overriding the profile's endpoint or stdio_command
    #[arg(long, value_name = "URL", conflicts_with = "embedded")]
    pub endpoint: Option<String>,
    /// Write a JUnit XML report
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write a cucumber JSON report
    #[arg(long, value_name = "FILE")]
    pub cucumber_json: Option<PathBuf>,
    /// Write the clause matrix as Markdown (for a CI step summary)
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write the clause matrix as JSON
    #[arg(long, value_name = "FILE")]
    pub report_json: Option<PathBuf>,
    /// Write the report as one self-contained HTML page: the verdict, the clause matrix and
    /// each failure with its request, response and request_id
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub reference: Reference,
    /// Fail unless every clause the level requires passed (skipped and not run count as
    /// failures)
    #[arg(long)]
    pub require_all: bool,
    /// What the exit status certifies: `seed`, what the seed contract requires (a server making
    /// another choice the seed allows passes), or `full`, also this project's extensions and
    /// the reference server's choices [default: the profile's `level`, else seed]
    #[arg(long, value_enum)]
    pub level: Option<crate::report::Level>,
    /// Run every scenario even when the server lists under half of the contract's tools
    /// (otherwise the run ends at once: not a Chataigne server)
    #[arg(long)]
    pub run_anyway: bool,
    /// End the run after this many seconds: nothing more is sent, the scenarios left are reported
    /// skipped, the reports are written and the exit code is 2 [default: the profile's
    /// `deadline_s`, else 1200]
    #[arg(long, value_name = "SECS")]
    pub deadline: Option<u64>,
    /// The folder of .feature files [default: the built-in copies of this version's features/]
    #[arg(long, value_name = "DIR")]
    pub features: Option<PathBuf>,
}

/// The binary's entry point.
pub fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let outcome = execute(cli, io::stdout());
    if let Some(e) = &outcome.error {
        eprintln!("chataigne-conformance: {e}");
    }
    std::process::ExitCode::from(outcome.code)
}

/// Parse `args` (the first is the program name) and run; for tests and embedding.
pub fn execute_args<I, T, Out>(args: I, console: Out) -> Outcome
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
    Out: io::Write + 'static,
{
    match Cli::try_parse_from(args) {
        Ok(cli) => execute(cli, console),
        Err(e) => Outcome::config_error(anyhow::anyhow!(e.to_string().trim().to_owned())),
    }
}

pub fn execute<Out: io::Write + 'static>(cli: Cli, console: Out) -> Outcome {
    match cli.command {
        Some(Command::Init { file }) => match init(file.as_deref()) {
            Ok(()) => Outcome { code: 0, error: None, report: None },
            Err(e) => Outcome::config_error(e),
        },
        Some(Command::SelfTest { markdown, features, full, jobs }) => {
            let lanes = jobs.or_else(|| std::thread::available_parallelism().ok()).map_or(1, usize::from);
            crate::self_test::run(markdown.as_deref(), features.as_deref(), full, lanes, console)
                .unwrap_or_else(Outcome::config_error)
        }
        Some(Command::Fuzz(args)) => fuzz(&args, console).unwrap_or_else(Outcome::config_error),
        Some(Command::Replay(args)) => replay(&args, console).unwrap_or_else(Outcome::config_error),
        None => {
            let args = cli.run.custom.clone();
            run(cli.run, console).unwrap_or_else(|e| {
                let outcome = Outcome::config_error(e);
                write_setup_failure(&args, outcome.error.as_deref().unwrap_or_default());
                outcome
            })
        }
    }
}

/// cucumber's JUnit writer calls every failure a panic and names the suite's own source line
/// each step matched: neither helps the reader of a server's report.
fn tidy_junit(path: &Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let tidy: String = text
        .split_inclusive('\n')
        .filter(|line| !line.trim_start().starts_with("Matched: "))
        .collect::<String>()
        .replace("Step Panicked", "Step failed")
        .replace("Hook Panicked", "Hook failed")
        .replace("Step panicked. Captured output: ", "");
    if tidy != text {
        std::fs::write(path, tidy).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Each clause's verdict and evidence (the exchanges its rules judged), as properties of one more
/// test suite: JUnit readers show them, and they add no test case that could count twice.
fn junit_evidence(path: &Path, report: &report::Report) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let Some(end) = text.rfind("</testsuites>") else { return Ok(()) };
    let full = report.level == crate::profile::Level::Full;
    let mut suite = String::from(
        "  <testsuite name=\"evidence per clause\" tests=\"0\" failures=\"0\" errors=\"0\">\n    <properties>\n",
    );
    for c in &report.clauses {
        let (status, evidence) = if full { (c.full_status, c.full_evidence) } else { (c.status, c.evidence) };
        suite.push_str(&format!(
            "      <property name=\"{}\" value=\"{} ({} exchanges judged)\"/>\n",
            c.id,
            status.as_str(),
            evidence
        ));
    }
    suite.push_str("    </properties>\n  </testsuite>\n");
    let out = format!("{}{suite}{}", &text[..end], &text[end..]);
    std::fs::write(path, out).with_context(|| format!("cannot write {}", path.display()))
}

/// A JUnit document of one test case whose `kind` is `error` or `failure`, carrying `message`.
fn junit_single(name: &str, kind: &str, message: &str) -> String {
    let escaped = crate::text::escape_markup(message, crate::text::Markup::Xml);
    let (errors, failures) = if kind == "error" { (1, 0) } else { (0, 1) };
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"chataigne-conformance\" tests=\"1\" failures=\"{failures}\" errors=\"{errors}\">\n  <testsuite name=\"preflight\" tests=\"1\" failures=\"{failures}\" errors=\"{errors}\">\n    <testcase classname=\"preflight\" name=\"{name}\">\n      <{kind} message=\"{escaped}\">{escaped}</{kind}>\n    </testcase>\n  </testsuite>\n</testsuites>\n"
    )
}

/// A run that could not start still leaves well-formed reports where they were asked for: CI
/// steps that read them (JUnit reporters, GitLab's `reports: junit`) then show the reason
/// instead of choking on an empty file.
fn write_setup_failure(args: &RunArgs, reason: &str) {
    let junit = junit_single("the run could start", "error", reason);
    let json = serde_json::json!({ "suite_version": env!("CARGO_PKG_VERSION"), "error": reason });
    let markdown = format!("## Chataigne conformance: the run could not start\n\n{reason}\n");
    let files = [
        (&args.junit, junit),
        (&args.cucumber_json, "[]\n".to_owned()),
        (&args.report_json, format!("{json:#}\n")),
        (&args.markdown, markdown),
        (&args.html, report::html_could_not_start(reason)),
    ];
    for (path, text) in files {
        if let Some(path) = path {
            // Best effort: the exit code and the reason on stderr already tell the story.
            let _ = create_parent(path).and_then(|()| std::fs::write(path, text).map_err(Into::into));
        }
    }
}

fn init(file: Option<&Path>) -> anyhow::Result<()> {
    let Some(file) = file else {
        io::stdout().write_all(profile::EXAMPLE.as_bytes())?;
        return Ok(());
    };
    if file.exists() {
        bail!("{} exists already; not overwriting it", file.display());
    }
    create_parent(file)?;
    std::fs::write(file, profile::EXAMPLE).with_context(|| format!("cannot write {}", file.display()))?;
    eprintln!("wrote {}: fill in the endpoint (or stdio_command) and one token per persona", file.display());
    Ok(())
}

fn run<Out: io::Write + 'static>(opts: CucumberOpts<RunArgs>, console: Out) -> anyhow::Result<Outcome> {
    let args = opts.custom.clone();
    // Outputs first: a path we cannot write is a configuration error, better found before a run.
    let junit = create_output(args.junit.as_deref())?;
    let cucumber_json = create_output(args.cucumber_json.as_deref())?;
    for path in [&args.markdown, &args.report_json, &args.html].into_iter().flatten() {
        create_parent(path)?;
    }
    let source = FeatureSource::choose(args.features.as_deref());

    let (_server, mut profile) = target_profile(args.profile.as_deref(), &args.reference)?;
    if let Some(endpoint) = &args.endpoint {
        profile.endpoint = Some(endpoint.clone());
        profile.stdio_command = None;
    }
    if let Some(level) = args.level {
        profile.level = level;
    }
    if let Some(deadline) = args.deadline {
        profile.deadline_s = deadline;
    }
    let deadline_s = profile.deadline_s;
    let options = RunOptions { require_all: args.require_all, run_anyway: args.run_anyway };
    let result = run_profile(profile, options, source, opts, Outputs { console, junit, cucumber_json });
    #[cfg(feature = "embedded")]
    if args.reference.embedded {
        let passed = matches!(&result, Ok(r) if r.exit_code(args.require_all) == 0);
        crate::embedded::finish_log(!passed);
    }
    let report = result?;

    if let Some(path) = &args.junit {
        if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
            // No scenario ran (not a Chataigne server): one failed test case with the verdict.
            let verdict = report::verdict_lines(&report).join(" ");
            std::fs::write(path, junit_single("verdict", "failure", &verdict))
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        tidy_junit(path)?;
        junit_evidence(path, &report)?;
    }
    if let Some(path) = &args.report_json {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, json + "\n").with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.markdown {
        std::fs::write(path, report::markdown(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        std::fs::write(path, report::html(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.cucumber_json
        && std::fs::metadata(path).is_ok_and(|m| m.len() == 0)
    {
        // No scenario ran (not a Chataigne server): an empty list, still valid JSON.
        std::fs::write(path, "[]\n").with_context(|| format!("cannot write {}", path.display()))?;
    }
    // A run cut short by its deadline judged only part of the server: not a verdict.
    if report.summary.interrupted.is_some() {
        let error = Some(format!(
            "the run's deadline of {deadline_s} s passed before every scenario ran (the server answers too slowly, or not at all); the reports were written"
        ));
        return Ok(Outcome { code: 2, error, report: Some(report) });
    }
    // Features that do not parse are a configuration error, though the report is written.
    if let Some(e) = report.parse_errors.first() {
        let error = Some(
            format!("{} feature file(s) do not parse: {e}", report.parse_errors.len()).replace('\n', " "),
        );
        return Ok(Outcome { code: 2, error, report: Some(report) });
    }
    Ok(Outcome { code: report.exit_code(args.require_all), error: None, report: Some(report) })
}

/// `fuzz`: exit 0 without a finding, 1 with findings, 2 without one when calls were blocked or
/// nothing was judged; `Err` is exit code 2.
fn fuzz<Out: io::Write>(args: &FuzzArgs, mut console: Out) -> anyhow::Result<Outcome> {
    for path in [&args.report_json, &args.junit, &args.html].into_iter().flatten() {
        create_parent(path)?;
    }
    let (_server, profile) = target_profile(args.profile.as_deref(), &args.reference)?;
    let level = args.level.unwrap_or(profile.level);
    // A seed of the clock when none is given: printed, so the run can be repeated.
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
    });
    let settings = crate::fuzz::Settings {
        seed,
        budget: args.budget,
        disposable: args.reference.embedded,
        no_rules: args.no_rules,
    };
    let id_map = profile.id_map();
    let result = crate::fuzz::run(profile, &settings, &mut console);
    #[cfg(feature = "embedded")]
    if args.reference.embedded {
        crate::embedded::finish_log(!matches!(&result, Ok(r) if r.findings.is_empty()));
    }
    let report = result?;
    if let Some(path) = &args.report_json {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, json + "\n").with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.junit {
        std::fs::write(path, crate::fuzz::junit::render(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(dir) = &args.out {
        let files = crate::fuzz::transcript::write_all(dir, &report.findings, &id_map)?;
        if !files.is_empty() {
            let _ = writeln!(
                console,
                "{} file(s) in {}: a transcript (chataigne-conformance replay FILE.json) and a scenario per finding",
                files.len(),
                dir.display()
            );
        }
    }
    if let Some(path) = &args.html {
        std::fs::write(path, crate::fuzz::html::render(&report, level))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    // As in a run: an ext clause is required at the full level only.
    let (counted, differences): (Vec<_>, Vec<_>) =
        report.findings.iter().partition(|f| crate::fuzz::html::counts(f, level));
    if !differences.is_empty() {
        let mut clauses: Vec<&str> = differences.iter().map(|f| f.clause).collect();
        clauses.dedup();
        let _ = writeln!(
            console,
            "{} finding(s) under ext clauses ({}) differ from the reference's choices: not counted at \
             the {} level (--level full counts them)",
            differences.len(),
            clauses.join(", "),
            level.as_str()
        );
    }
    // As in a run: what could not be judged is no verdict (exit code 2), never a pass.
    let code = report.exit_code(counted.len());
    Ok(Outcome { code, error: None, report: None })
}

/// `replay`: exit 1 the finding reproduces, 0 it does not; `Err` is exit code 2.
fn replay<Out: io::Write>(args: &ReplayArgs, mut console: Out) -> anyhow::Result<Outcome> {
    use crate::fuzz::replay::Verdict;
    let transcript = crate::fuzz::transcript::Transcript::load(&args.file)?;
    let (_server, profile) = target_profile(args.profile.as_deref(), &args.reference)?;
    let verdict = crate::fuzz::replay::run(&transcript, profile, args.reference.embedded, &mut console)?;
    let code = match &verdict {
        Verdict::Reproduced(detail) => {
            let _ = writeln!(console, "reproduced [{}] {detail}", transcript.clause);
            1
        }
        Verdict::Other(found) => {
            let _ = writeln!(console, "not reproduced: [{}] held; other clauses broke:", transcript.clause);
            for (clause, detail) in found {
                let _ = writeln!(console, "  [{clause}] {detail}");
            }
            0
        }
        Verdict::Passed => {
            let _ = writeln!(
                console,
                "not reproduced: [{}] held, and every other rule of these calls",
                transcript.clause
            );
            0
        }
    };
    #[cfg(feature = "embedded")]
    if args.reference.embedded {
        crate::embedded::finish_log(code != 0);
    }
    Ok(Outcome { code, error: None, report: None })
}

/// The reference server started in-process, stopped when dropped (`()` without the feature).
#[cfg(feature = "embedded")]
type Server = Option<crate::embedded::EmbeddedServer>;
#[cfg(not(feature = "embedded"))]
type Server = Option<()>;

/// The profile `--embedded` (with its `--defect`s and `--variant`s) or `--profile` names, and
/// the embedded server to keep alive while it is used.
fn target_profile(profile: Option<&Path>, args: &Reference) -> anyhow::Result<(Server, Profile)> {
    if args.embedded {
        #[cfg(feature = "embedded")]
        {
            let defects = args
                .defect
                .iter()
                .map(|name| {
                    mock_server::Defect::parse(name).with_context(|| {
                        format!("--defect {name}: no such defect (see `chataigne-mock defects`)")
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let variants = args
                .variant
                .iter()
                .map(|name| {
                    mock_server::Variant::parse(name).with_context(|| {
                        format!("--variant {name}: no such variant (see `chataigne-mock variants`)")
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let (server, profile) = crate::embedded::start(&defects, &variants)?;
            return Ok((Some(server), profile));
        }
        #[cfg(not(feature = "embedded"))]
        bail!("--embedded: this build has no reference server (built without the `embedded` feature)")
    }
    let Some(path) = profile else {
        bail!("give --profile FILE (write one with `chataigne-conformance init FILE`) or --embedded");
    };
    Ok((None, Profile::load(path)?))
}

fn create_output(path: Option<&Path>) -> anyhow::Result<Option<File>> {
    let Some(path) = path else { return Ok(None) };
    create_parent(path)?;
    File::create(path).map(Some).with_context(|| format!("cannot write {}", path.display()))
}
