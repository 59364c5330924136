//! A deployment named replica by replica (`replicas` in the profile): each client's calls go to
//! the endpoint and every replica in turn, so a write through one is read through the next. Three
//! reference servers that share nothing are not one server: the run fails under the clauses that
//! span calls (a cursor, a key, a version, a write read back), exit 1, with each exchange naming
//! the replica it went to. One server named three times is one server: certified.

use std::path::PathBuf;

use chataigne_conformance::embedded::EmbeddedServer;
use chataigne_conformance::profile::Profile;
use chataigne_conformance::report::Status;

/// Reference servers in-process, each with its own state and secret, and a profile naming the
/// first as the endpoint (and its control API) and `replicas` as given.
struct Deployment {
    _servers: Vec<EmbeddedServer>,
    profile: PathBuf,
    dir: PathBuf,
}

impl Deployment {
    fn start(name: &str, servers: usize, replicas: impl Fn(&[String]) -> Vec<String>) -> Deployment {
        let (mut running, mut profiles): (Vec<EmbeddedServer>, Vec<Profile>) = (Vec::new(), Vec::new());
        for _ in 0..servers {
            let (server, profile) =
                chataigne_conformance::embedded::start(&[], &[]).expect("the reference server starts");
            running.push(server);
            profiles.push(profile);
        }
        let endpoints: Vec<String> = profiles.iter().map(|p| p.endpoint.clone().unwrap()).collect();
        let first = &profiles[0];
        let control = first.control.as_ref().expect("a control API");
        let dir = std::env::temp_dir().join(format!("chataigne-replicas-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = format!(
            "endpoint = {:?}\nreplicas = {:?}\ntimeout_ms = 10000\n[control]\nurl = {:?}\nsecret = {:?}\n[tokens]\n",
            endpoints[0],
            replicas(&endpoints),
            control.url,
            control.secret
        );
        for (persona, token) in &first.tokens {
            text.push_str(&format!("{persona} = {token:?}\n"));
        }
        let profile = dir.join("profile.toml");
        std::fs::write(&profile, text).unwrap();
        Deployment { _servers: running, profile, dir }
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        chataigne_conformance::embedded::finish_log(false);
    }
}

#[test]
fn three_replicas_that_share_nothing_fail_under_the_clauses_that_span_calls() {
    let deployment = Deployment::start("apart", 3, |endpoints| endpoints.to_vec());
    let outcome = crate::fake::run_profile(&deployment.profile, &["--level", "full"]);
    assert_eq!(outcome.code, 1, "{:?}", outcome.error);
    let report = outcome.report.as_ref().expect("a report");
    let failed: Vec<&str> =
        report.clauses.iter().filter(|c| c.status == Status::Failed).map(|c| c.id.as_str()).collect();
    // A key stored, a version, a cursor, a window and a revocation, each on one replica only.
    for id in ["IDEM-4", "PRE-4", "PAG-4", "PAG-6", "LIM-2", "AUTH-7", "PRE-2", "IDEM-2"] {
        assert!(failed.contains(&id), "{id} not among {failed:?}");
    }
    // What needs nothing shared still holds.
    let passed = |id: &str| report.clauses.iter().any(|c| c.id == id && c.status == Status::Passed);
    assert!(passed("PROTO-2") && passed("PAG-5"), "{failed:?}");
    // A failure shows the exchanges with the replica each went to: more than one of them.
    let messages: String = report
        .clauses
        .iter()
        .flat_map(|c| &c.scenarios)
        .filter_map(|s| s.message.clone())
        .collect::<Vec<_>>()
        .join("\n");
    let named = deployment_urls(&deployment).iter().filter(|u| messages.contains(u.as_str())).count();
    assert!(named >= 2, "{messages}");
}

/// One server reached by two names (`127.0.0.1` and `localhost`): the calls alternate between
/// the names, and the run certifies as against one URL.
#[test]
fn one_server_named_as_every_replica_is_one_server() {
    let deployment =
        Deployment::start("one", 1, |endpoints| vec![endpoints[0].replace("127.0.0.1", "localhost")]);
    assert_eq!(deployment_urls(&deployment).len(), 2);
    let outcome = crate::fake::run_profile(&deployment.profile, &["--level", "full"]);
    let failed: Vec<String> = outcome
        .report
        .iter()
        .flat_map(|r| &r.clauses)
        .filter(|c| c.status != Status::Passed || c.full_status != Status::Passed)
        .map(|c| {
            format!("{} {:?}", c.id, c.scenarios.iter().filter_map(|s| s.message.clone()).collect::<Vec<_>>())
        })
        .collect();
    assert_eq!(outcome.code, 0, "{:?} {failed:#?}", outcome.error);
}

fn deployment_urls(deployment: &Deployment) -> Vec<String> {
    Profile::load(&deployment.profile).unwrap().route()
}

/// `fuzz` spreads its calls over the replicas too, and a finding's calls keep the replica each
/// went to (the endpoint's are left unnamed).
#[test]
fn fuzz_findings_on_replicas_that_share_nothing_name_the_replica_of_each_call() {
    let deployment = Deployment::start("fuzz", 3, |endpoints| endpoints.to_vec());
    let report_path = deployment.dir.join("fuzz.json");
    let out = deployment.dir.join("findings");
    let outcome = chataigne_conformance::cli::execute_args(
        [
            "chataigne-conformance",
            "fuzz",
            "--profile",
            deployment.profile.to_str().unwrap(),
            "--seed",
            "7",
            "--budget",
            "600calls",
            "--report-json",
            report_path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        std::io::sink(),
    );
    assert_eq!(outcome.code, 1, "{:?}", outcome.error);
    // The transcripts `--out` writes, one per finding that can be replayed.
    let transcripts: Vec<serde_json::Value> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect();
    let replicas = &deployment_urls(&deployment)[1..];
    let named: Vec<&str> = transcripts
        .iter()
        .flat_map(|t| t["calls"].as_array().into_iter().flatten())
        .filter_map(|c| c["url"].as_str())
        .collect();
    assert!(named.iter().any(|u| replicas.iter().any(|r| r == u)), "{transcripts:#?}");
}
