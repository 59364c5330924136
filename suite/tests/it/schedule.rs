//! The run's plan over the built-in features: no scenario meets a rate window another scenario of
//! the same run filled. A scenario that exhausts windows (a LIM-2 burst) is queued after every
//! scenario that calls as one of its pairs (the runner's `RatePhase` then holds it until they
//! have finished), and the bursts exhaust pairs none of them uses otherwise, so one move of the
//! clock (or one wait) freshens every window they need.

use chataigne_conformance::context::{Capabilities, load_dataset};
use chataigne_conformance::features::{FeatureParser, FeatureSource};
use chataigne_conformance::runner::scenario_needs;
use chataigne_conformance::schedule::{self, Needs};
use cucumber::Parser as _;
use futures::StreamExt as _;

/// Every scenario of the built-in features, in the order the runner queues them, with what it
/// needs; `capabilities` as the run would have them (scenarios it cannot run lose their steps).
fn queued(capabilities: Capabilities) -> Vec<(String, Needs)> {
    let personas = schedule::personas(&load_dataset(None).expect("the built-in dataset"));
    let parser = FeatureParser { capabilities };
    let features: Vec<_> =
        futures::executor::block_on(parser.parse(FeatureSource::Embedded, cucumber::cli::Empty).collect());
    let mut out = Vec::new();
    for feature in features.into_iter().map(|f| f.expect("the built-in features parse")) {
        let rules = feature.rules.iter().flat_map(|r| r.scenarios.iter().map(move |s| (Some(r), s)));
        for (rule, scenario) in feature.scenarios.iter().map(|s| (None, s)).chain(rules) {
            let name = format!("{}: {}", feature.name, scenario.name);
            out.push((name, scenario_needs(&feature, rule, scenario, &personas)));
        }
    }
    out
}

fn embedded() -> Capabilities {
    let features = ["reset", "clock", "faults", "deadlines", "memberships", "orders"];
    Capabilities {
        control_api: true,
        server_log: true,
        error_reports: true,
        control_features: features.map(str::to_owned).to_vec(),
        stdio: false,
    }
}

/// The scenarios that exhaust a window before a scenario using the same pair is queued.
fn met_too_late(queue: &[(String, Needs)]) -> Vec<String> {
    let mut met = Vec::new();
    for (i, (burst, exhausts)) in queue.iter().enumerate() {
        for (user, needs) in &queue[i + 1..] {
            if needs.exhausts.is_empty() && needs.meets(exhausts) {
                met.push(format!("\"{burst}\" is queued before \"{user}\", which uses its pair"));
            }
        }
    }
    met
}

#[test]
fn no_scenario_is_queued_after_a_burst_on_its_pair() {
    for (label, capabilities) in [("embedded", embedded()), ("no control API", Capabilities::default())] {
        let queue = queued(capabilities);
        let bursts = queue.iter().filter(|(_, n)| !n.exhausts.is_empty()).count();
        assert!(bursts >= 3, "{label}: the LIM-2 bursts are known to the scheduler ({bursts})");
        let met = met_too_late(&queue);
        assert!(
            met.is_empty(),
            "{label}: {} scenario(s) would meet a full window:\n{}",
            met.len(),
            met.join("\n")
        );
    }
}

#[test]
fn every_burst_names_its_pair_and_tool_and_no_other_burst_uses_it() {
    let queue = queued(embedded());
    for (name, needs) in queue.iter().filter(|(_, n)| !n.exhausts.is_empty()) {
        for window in &needs.exhausts {
            assert_ne!(window.tool, "*", "{name}: add its burst step to schedule::BURST_STEPS");
        }
        for (other, theirs) in queue.iter().filter(|(o, n)| o != name && !n.exhausts.is_empty()) {
            assert!(
                !theirs.meets(needs),
                "\"{other}\" uses a pair \"{name}\" exhausts: one clock move serves them both only if not"
            );
        }
    }
    // Every scenario tagged LIM-2 is a burst the scheduler sees.
    let lim2 = chataigne_conformance::features::EMBEDDED
        .iter()
        .map(|(_, text)| text.matches("@LIM-2").count())
        .sum::<usize>();
    let bursts = queue.iter().filter(|(_, n)| !n.exhausts.is_empty()).count();
    assert_eq!(bursts, lim2, "every @LIM-2 scenario exhausts a window the scheduler knows");
}

/// The check itself catches the order the runner had before (bursts queued first).
#[test]
fn a_burst_queued_first_is_caught() {
    let mut queue = queued(embedded());
    queue.sort_by_key(|(_, n)| n.exhausts.is_empty());
    assert!(!met_too_late(&queue).is_empty());
}

/// A whole-server scenario may skip its starting reset only when the scenario started just
/// before it reset the server while holding it whole; any scenario started in between, or a
/// reset made without the server held, leaves the next one to reset again.
#[tokio::test]
async fn a_reset_is_trusted_only_by_the_next_scenario_to_start() {
    let locks = schedule::Locks::default();
    let whole = Needs::whole_server_only();
    let shared = Needs { resources: [(schedule::Resource::Server, false)].into(), ..Needs::default() };

    let first = locks.acquire(&whole).await;
    assert!(!first.server_fresh(), "nothing reset the server before the run's first scenario");
    first.reset_done();
    drop(first);
    let second = locks.acquire(&whole).await;
    assert!(second.server_fresh(), "the scenario before it reset the server and nothing ran since");
    drop(second);
    // The second did not reset: the third cannot trust the first's reset.
    let third = locks.acquire(&whole).await;
    assert!(!third.server_fresh());
    third.reset_done();
    drop(third);
    let reader = locks.acquire(&shared).await;
    reader.reset_done();
    drop(reader);
    let fourth = locks.acquire(&whole).await;
    assert!(!fourth.server_fresh(), "a scenario ran (and wrote) between the reset and this one");
}
