//! The verdict maths of the rate limits (LIM-2, LIM-3), apart from the steps that drive bursts
//! (`steps::load`): from the calls' order and times alone, whatever second a run started and
//! however fast the server answers, whether a burst shows a limit the seed allows (a sliding
//! window, calendar minutes, a token bucket of the rate, or the reference's window). Pure, and
//! tested against simulated servers of every allowed window.

use serde::{Deserialize, Serialize};

/// Calls in flight at once, each through its own session of the same persona (so the same
/// pair): fast enough to exceed 1000 a minute against a server answering in up to ~900 ms.
pub const IN_FLIGHT: usize = 64;

/// A burst that met no refusal for this long stops (a server too slow to be driven past the
/// rate; a bucket drained at a low rate).
pub const MAX_BURST_S: f64 = 180.0;

/// The most calls any allowed window serves in `elapsed_s` seconds from a fresh pair: two full
/// calendar minutes across a minute's end, plus what a bucket refills meanwhile.
pub fn bound(limit: usize, elapsed_s: f64) -> usize {
    2 * limit + (limit as f64 * elapsed_s.max(0.0) / 60.0).ceil() as usize
}

/// Whether a burst that has sent `sent` calls in `elapsed_s` seconds without meeting a refusal
/// sends another one.
pub fn keep_sending(limit: usize, sent: usize, elapsed_s: f64) -> bool {
    sent <= bound(limit, elapsed_s) && elapsed_s < MAX_BURST_S
}

/// What one call of a burst came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Answer {
    /// Served: a success (or, for calls that are refused anyway, any answer but a rate limit).
    Served,
    /// Refused for its rate: a tool error of category rate_limit (or code MCP_RATE_LIMITED).
    Limited,
    /// Neither: another error, no answer.
    Other,
}

/// A window: every allowed limiter counts a call for at most this long after it handled it.
pub const WINDOW_S: f64 = 60.0;

/// What an earlier call of the run must be within (a window and this, before the refusal was
/// sent) to be one the server may still count: clocks that round to the second.
pub const MARGIN_S: f64 = 1.0;

/// What a call of the run made before the burst, on the burst's pair and tool, came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Earlier {
    /// A success: every allowed window counts it.
    Served,
    /// A tool error other than a rate limit (a refusal of its arguments, its access, …): the
    /// reference counts it (choice `failed-calls-count`), another server may not.
    Refused,
    /// Refused for its rate: a window full then, which the run may not know all of (an earlier
    /// run's). The reference's window at a later call was opened after it.
    Limited,
    /// No tool result (no answer, an HTTP or JSON-RPC error, another token): counted or not.
    Unknown,
}

/// A call of the run before the burst on its pair and tool: when it left and came back, in
/// seconds since the burst started (so both negative).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EarlierCall {
    pub answer: Earlier,
    pub sent: f64,
    pub answered: f64,
}

/// One call of a burst: its place in the order of sending (1-based), and when it left and came
/// back, in seconds since the burst started.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Call {
    pub index: usize,
    pub answer: Answer,
    pub sent: f64,
    pub answered: f64,
}

/// Whether the burst matched the reference's window (choice `rate-window`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Exactness {
    /// Exactly `limit` calls served: call `limit + 1` of the window was the first refused.
    Exact,
    /// This many calls served before and around the first refusal.
    Served(usize),
    /// The first `limit + 1` calls took this many seconds, more than one window: the reference's
    /// behaviour cannot be told from another's.
    Unjudged(f64),
    /// The run's earlier calls on the pair may or may not be in the refusal's window (this many:
    /// some more than a window before the refusal, or ones without a tool result, or sent while
    /// an earlier refusal was on its way back).
    Uncertain(usize),
}

/// What a burst shows about the rate limit of its pair and tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Verdict {
    /// At least `limit` calls served, then a refusal within the bound. `served` counts the
    /// burst's calls; `exact` judges them with the `earlier` calls of the run in the refusal's
    /// window.
    Held { served: usize, refused: usize, after_s: f64, exact: Exactness, earlier: usize },
    /// Call `refused` was refused though at most `served` < `limit` calls could have been served
    /// before it (`earlier` of them earlier in the run): the window was in use, or the server
    /// limits below the contract's rate.
    Early { served: usize, refused: usize, earlier: usize },
    /// `sent` calls in `elapsed_s` seconds, more than any allowed window serves (`bound`), and
    /// no refusal (or the first one only after that many).
    NoRefusal { sent: usize, elapsed_s: f64, bound: usize },
    /// No refusal within [`MAX_BURST_S`]: `sent` calls were too few to exceed the rate.
    TooSlow { sent: usize, elapsed_s: f64 },
    /// Call `index` was neither served nor refused for its rate.
    Broken { index: usize },
}

/// The verdict on a burst of `calls` (in any order) against `limit` calls a minute, on a pair
/// the run has not called with the tool in the last window. A burst without a refusal has either
/// gone past the bound (a limit missing or too high) or run out of time ([`keep_sending`]).
pub fn judge(limit: usize, calls: &[Call]) -> Verdict {
    judge_after(limit, &[], calls)
}

/// The verdict on a burst of `calls` that `earlier` calls of the run on the same pair and tool
/// preceded: the whole sequence, judged against every window the seed allows.
/// - The limit held if at least `limit` calls may have been counted when the refusal came: the
///   burst's calls sent before it came back, and every earlier call answered less than a window
///   (and [`MARGIN_S`]) before it was sent — whatever their answer, since a server may count a
///   failed call (the reference does). Fewer: an early refusal.
/// - The bound is the burst's alone: from any state, a window serves at most [`bound`] calls in
///   the burst's seconds (a used window serves fewer).
/// - The reference's window (exactness): the earlier calls since the last one refused for its
///   rate opened the window, and with the burst's served calls they make exactly `limit` —
///   when they and the refusal fit in one window and each got a tool result; else
///   [`Exactness::Uncertain`].
pub fn judge_after(limit: usize, earlier: &[EarlierCall], calls: &[Call]) -> Verdict {
    let first_limited = calls
        .iter()
        .filter(|c| c.answer == Answer::Limited)
        .min_by(|a, b| a.answered.total_cmp(&b.answered).then(a.index.cmp(&b.index)));
    let first_other = |before: f64| {
        calls.iter().filter(|c| c.answer == Answer::Other && c.sent <= before).map(|c| c.index).min()
    };
    let Some(refusal) = first_limited else {
        if let Some(index) = first_other(f64::INFINITY) {
            return Verdict::Broken { index };
        }
        // The last call was sent while the burst was within the bound at that time: the burst
        // stopped at the bound if it has gone past it since, else at the time limit.
        let sent = calls.len();
        let last_sent = calls.iter().map(|c| c.sent).fold(0.0, f64::max);
        let elapsed_s = calls.iter().map(|c| c.answered).fold(0.0, f64::max);
        let bound = bound(limit, last_sent);
        return if sent > bound {
            Verdict::NoRefusal { sent, elapsed_s, bound }
        } else {
            Verdict::TooSlow { sent, elapsed_s }
        };
    };
    if let Some(index) = first_other(refusal.answered) {
        return Verdict::Broken { index };
    }
    // What the server may have handled before refusing: every call sent before the refusal
    // came back.
    let served_before =
        calls.iter().filter(|c| c.answer == Answer::Served && c.sent <= refusal.answered).count();
    let counted_earlier = earlier.iter().filter(|c| c.answered > refusal.sent - WINDOW_S - MARGIN_S).count();
    if served_before + counted_earlier < limit {
        return Verdict::Early {
            served: served_before + counted_earlier,
            refused: refusal.index,
            earlier: counted_earlier,
        };
    }
    let sent_before = refusal.index - 1;
    let allowed = bound(limit, refusal.answered);
    if sent_before > allowed {
        return Verdict::NoRefusal { sent: sent_before, elapsed_s: refusal.answered, bound: allowed };
    }
    let served = calls.iter().filter(|c| c.answer == Answer::Served).count();
    let first_sent = calls.iter().map(|c| c.sent).fold(f64::INFINITY, f64::min);
    let span = refusal.sent - first_sent;
    let (window, uncertain) = reference_window(earlier, refusal);
    let exact = if uncertain > 0 {
        Exactness::Uncertain(uncertain)
    } else if span >= WINDOW_S {
        Exactness::Unjudged(span)
    } else if window + served == limit {
        Exactness::Exact
    } else {
        Exactness::Served(window + served)
    };
    Verdict::Held { served, refused: refusal.index, after_s: refusal.answered, exact, earlier: window }
}

/// The earlier calls in the reference's window at `refusal`, if they are certain: those since
/// the last earlier refusal for the rate came back (the window that refused was full, so the
/// next call answered otherwise opened a new one). Uncertain: some of them without a tool
/// result, sent while that refusal was on its way back, or so early that the refusal may be in
/// a later window. `(in the window, uncertain)`.
fn reference_window(earlier: &[EarlierCall], refusal: &Call) -> (usize, usize) {
    let limited = earlier.iter().filter(|c| c.answer == Earlier::Limited);
    let last_limited_sent = limited.clone().map(|c| c.sent).fold(f64::NEG_INFINITY, f64::max);
    let last_limited_back = limited.map(|c| c.answered).fold(f64::NEG_INFINITY, f64::max);
    let since: Vec<&EarlierCall> =
        earlier.iter().filter(|c| c.answer != Earlier::Limited && c.answered > last_limited_sent).collect();
    let first_sent = since.iter().map(|c| c.sent).fold(f64::INFINITY, f64::min);
    let uncertain = since
        .iter()
        .filter(|c| {
            c.answer == Earlier::Unknown
                || c.sent <= last_limited_back
                || refusal.answered - first_sent >= WINDOW_S
        })
        .count();
    (since.len(), uncertain)
}

#[cfg(test)]
mod tests {
    //! [`judge`] on bursts driven like [`burst`] drives them (`keep_sending`, `IN_FLIGHT` at a
    //! time) against simulated servers of every window the seed allows, started at any second.

    use std::collections::VecDeque;

    use super::{
        Answer, Call, Earlier, EarlierCall, Exactness, IN_FLIGHT, Verdict, bound, judge, judge_after,
        keep_sending,
    };

    /// A server's rate limiter: whether the call it handles at `t` (seconds) is served.
    trait Limiter {
        fn hit(&mut self, t: f64) -> Answer;
    }

    /// At most `limit` served calls in any 60 s.
    struct Sliding {
        limit: usize,
        served: VecDeque<f64>,
    }

    impl Limiter for Sliding {
        fn hit(&mut self, t: f64) -> Answer {
            while self.served.front().is_some_and(|s| t - s >= 60.0) {
                self.served.pop_front();
            }
            if self.served.len() < self.limit {
                self.served.push_back(t);
                Answer::Served
            } else {
                Answer::Limited
            }
        }
    }

    /// Calendar minutes; the burst starts `offset` seconds into a minute.
    struct Calendar {
        limit: usize,
        offset: f64,
        minute: i64,
        count: usize,
    }

    impl Limiter for Calendar {
        fn hit(&mut self, t: f64) -> Answer {
            let minute = ((t + self.offset) / 60.0).floor() as i64;
            if minute != self.minute {
                (self.minute, self.count) = (minute, 0);
            }
            if self.count < self.limit {
                self.count += 1;
                Answer::Served
            } else {
                Answer::Limited
            }
        }
    }

    /// A bucket of `limit` tokens refilled at `limit` a minute.
    struct Bucket {
        limit: f64,
        tokens: f64,
        last: f64,
    }

    impl Limiter for Bucket {
        fn hit(&mut self, t: f64) -> Answer {
            self.tokens = (self.tokens + (t - self.last) * self.limit / 60.0).min(self.limit);
            self.last = t;
            if self.tokens >= 1.0 {
                self.tokens -= 1.0;
                Answer::Served
            } else {
                Answer::Limited
            }
        }
    }

    /// The reference: a window opened by the first call, lasting 60 s.
    struct Reference {
        limit: usize,
        start: Option<f64>,
        count: usize,
    }

    impl Limiter for Reference {
        fn hit(&mut self, t: f64) -> Answer {
            if self.start.is_none_or(|s| t - s >= 60.0) {
                (self.start, self.count) = (Some(t), 0);
            }
            if self.count < self.limit {
                self.count += 1;
                Answer::Served
            } else {
                Answer::Limited
            }
        }
    }

    /// Serves `n` calls, then refuses everything (a limit below the contract's).
    struct Below(usize);

    impl Limiter for Below {
        fn hit(&mut self, _: f64) -> Answer {
            if self.0 == 0 {
                return Answer::Limited;
            }
            self.0 -= 1;
            Answer::Served
        }
    }

    /// No limit; call `broken` (if any) fails otherwise.
    struct Unlimited {
        calls: usize,
        broken: Option<usize>,
    }

    impl Limiter for Unlimited {
        fn hit(&mut self, _: f64) -> Answer {
            self.calls += 1;
            if Some(self.calls) == self.broken { Answer::Other } else { Answer::Served }
        }
    }

    fn sliding(limit: usize) -> Sliding {
        Sliding { limit, served: VecDeque::new() }
    }

    fn calendar(limit: usize, offset: f64) -> Calendar {
        Calendar { limit, offset, minute: i64::MIN, count: 0 }
    }

    fn bucket(limit: usize) -> Bucket {
        Bucket { limit: limit as f64, tokens: limit as f64, last: f64::NEG_INFINITY }
    }

    fn reference(limit: usize) -> Reference {
        Reference { limit, start: None, count: 0 }
    }

    /// Drive `server` as `burst` does: `IN_FLIGHT` calls at a time, call `i` answered
    /// `latency(i)` seconds after it is sent and handled by the server halfway; no new call after
    /// the first refusal or once `keep_sending` says stop.
    fn simulate(limit: usize, server: &mut dyn Limiter, latency: impl Fn(usize) -> f64) -> Vec<Call> {
        // The timings of the tests below are worked out for 16 calls in flight; the verdict
        // rules hold for any width (`the_burst_width_changes_no_verdict`).
        simulate_with(16, limit, server, latency)
    }

    fn simulate_with(
        in_flight: usize,
        limit: usize,
        server: &mut dyn Limiter,
        latency: impl Fn(usize) -> f64,
    ) -> Vec<Call> {
        // (index, sent, answered, handled, decision)
        let mut flight: Vec<(usize, f64, f64, f64, Option<Answer>)> = Vec::new();
        let mut calls = Vec::new();
        let (mut now, mut next, mut stop) = (0.0_f64, 1, false);
        loop {
            while !stop && flight.len() < in_flight {
                if !keep_sending(limit, next - 1, now) {
                    stop = true;
                    break;
                }
                let lat = latency(next);
                flight.push((next, now, now + lat, now + lat / 2.0, None));
                next += 1;
            }
            let Some(first) = (0..flight.len())
                .min_by(|&a, &b| flight[a].2.total_cmp(&flight[b].2).then(flight[a].0.cmp(&flight[b].0)))
            else {
                return calls;
            };
            // The server handles calls in the order they reach it.
            let handled = flight[first].3;
            let mut order: Vec<usize> =
                (0..flight.len()).filter(|&k| flight[k].4.is_none() && flight[k].3 <= handled).collect();
            order.sort_by(|&a, &b| flight[a].3.total_cmp(&flight[b].3).then(flight[a].0.cmp(&flight[b].0)));
            for k in order {
                flight[k].4 = Some(server.hit(flight[k].3));
            }
            let (index, sent, answered, _, decision) = flight.swap_remove(first);
            let answer = decision.expect("handled before it is answered");
            now = answered;
            calls.push(Call { index, answer, sent, answered });
            stop |= answer != Answer::Served;
        }
    }

    const FAST: f64 = 0.01;

    fn held(v: &Verdict) -> (usize, Exactness) {
        match v {
            Verdict::Held { served, exact, .. } => (*served, exact.clone()),
            other => panic!("expected the limit to hold: {other:?}"),
        }
    }

    #[test]
    fn the_bound_allows_two_minutes_and_a_refill() {
        assert_eq!(bound(1000, 0.0), 2000);
        assert_eq!(bound(1000, 30.0), 2500);
        assert_eq!(bound(500, 1.0), 1009);
        assert!(keep_sending(1000, 2000, 0.0));
        assert!(!keep_sending(1000, 2001, 0.0));
        assert!(!keep_sending(1000, 10, super::MAX_BURST_S));
    }

    #[test]
    fn the_reference_window_is_exact() {
        for limit in [1000, 500] {
            let calls = simulate(limit, &mut reference(limit), |_| FAST);
            let v = judge(limit, &calls);
            assert_eq!(held(&v), (limit, Exactness::Exact), "{limit}");
            let Verdict::Held { refused, .. } = v else { unreachable!() };
            assert_eq!(refused, limit + 1);
        }
    }

    #[test]
    fn a_sliding_window_passes_and_looks_like_the_reference() {
        let calls = simulate(1000, &mut sliding(1000), |_| FAST);
        assert_eq!(held(&judge(1000, &calls)), (1000, Exactness::Exact));
    }

    #[test]
    fn calendar_minutes_pass_whatever_the_second_the_burst_starts() {
        // Well inside a minute: like the reference.
        let calls = simulate(1000, &mut calendar(1000, 10.0), |_| FAST);
        assert_eq!(held(&judge(1000, &calls)), (1000, Exactness::Exact));
        // :00 passes during the burst (1000 calls take about 0.63 s here): more than 1000 served.
        for before_00 in [0.05, 0.3, 0.6, 0.62] {
            let calls = simulate(1000, &mut calendar(1000, 60.0 - before_00), |_| FAST);
            let v = judge(1000, &calls);
            let (served, exact) = held(&v);
            assert!(served > 1000 && served <= 2000, "{before_00}: {v:?}");
            assert_eq!(exact, Exactness::Served(served), "{before_00}");
        }
        // :00 comes just after the refusal: like the reference.
        for before_00 in [0.65, 1.0, 59.9] {
            let calls = simulate(1000, &mut calendar(1000, 60.0 - before_00), |_| FAST);
            assert_eq!(held(&judge(1000, &calls)), (1000, Exactness::Exact), "{before_00}");
        }
        // :00 right after call 1000: two full minutes back to back, still within the bound.
        let most = (0..80)
            .map(|k| {
                let calls = simulate(1000, &mut calendar(1000, 60.0 - 0.6 - k as f64 * 0.0005), |_| FAST);
                held(&judge(1000, &calls)).0
            })
            .max();
        assert!(most.is_some_and(|n| n > 1990), "{most:?}");
    }

    #[test]
    fn the_burst_width_changes_no_verdict() {
        for width in [1, 16, IN_FLIGHT] {
            let calls = simulate_with(width, 1000, &mut reference(1000), |_| FAST);
            assert_eq!(held(&judge(1000, &calls)), (1000, Exactness::Exact), "reference, {width} in flight");
            let calls = simulate_with(width, 1000, &mut sliding(1000), |_| FAST);
            assert_eq!(held(&judge(1000, &calls)), (1000, Exactness::Exact), "sliding, {width} in flight");
            let calls = simulate_with(width, 1000, &mut calendar(1000, 10.0), |_| FAST);
            assert_eq!(held(&judge(1000, &calls)).0, 1000, "calendar, {width} in flight");
            let calls = simulate_with(width, 1000, &mut bucket(1000), |_| FAST);
            let served = held(&judge(1000, &calls)).0;
            assert!(served > 1000 && served <= 2000, "bucket, {width} in flight: {served}");
        }
    }

    #[test]
    fn a_token_bucket_passes_fast_or_slow() {
        let calls = simulate(1000, &mut bucket(1000), |_| FAST);
        let (served, exact) = held(&judge(1000, &calls));
        assert!(served > 1000 && served < 1020, "{served}");
        assert_eq!(exact, Exactness::Served(served));
        // 32 calls a second: the bucket drains slowly, for over a minute.
        let calls = simulate(1000, &mut bucket(1000), |_| 0.5);
        let v = judge(1000, &calls);
        let (served, exact) = held(&v);
        assert!(served > 2000, "{v:?}");
        assert!(matches!(exact, Exactness::Unjudged(s) if s > 60.0), "{v:?}");
        // The write rate too.
        let calls = simulate(500, &mut bucket(500), |_| 0.1);
        assert!(held(&judge(500, &calls)).0 > 500);
    }

    #[test]
    fn a_slow_server_is_judged_by_what_it_served_not_by_its_speed() {
        // 20 calls a second: 1000 served in 50 s, the next refused.
        let calls = simulate(1000, &mut reference(1000), |_| 0.8);
        assert_eq!(held(&judge(1000, &calls)), (1000, Exactness::Exact));
        // 16 calls a second is under 1000 a minute: no window is ever full.
        let calls = simulate(1000, &mut reference(1000), |_| 1.0);
        assert!(matches!(judge(1000, &calls), Verdict::TooSlow { .. }), "{:?}", judge(1000, &calls));
    }

    #[test]
    fn calls_in_flight_may_reach_the_server_in_any_order() {
        // Latencies from 0.01 to 0.05 s: calls overtake each other around call 1000.
        let jitter = |i: usize| 0.01 + (i * 7 % 5) as f64 * 0.01;
        for (limit, calls) in [
            (1000, simulate(1000, &mut reference(1000), jitter)),
            (1000, simulate(1000, &mut sliding(1000), jitter)),
            (500, simulate(500, &mut reference(500), jitter)),
        ] {
            let v = judge(limit, &calls);
            assert_eq!(held(&v), (limit, Exactness::Exact), "{v:?}");
        }
    }

    #[test]
    fn a_window_in_use_is_an_early_refusal_then_a_fresh_one_passes() {
        // An earlier run filled the window 30 s ago.
        let mut server = Reference { limit: 1000, start: Some(-30.0), count: 1000 };
        let calls = simulate(1000, &mut server, |_| FAST);
        assert_eq!(judge(1000, &calls), Verdict::Early { served: 0, refused: 1, earlier: 0 });
        // Calendar minutes: an earlier run in the same minute, the burst 2 s before :00.
        let mut server = Calendar { limit: 1000, offset: 58.0, minute: 0, count: 1000 };
        assert!(matches!(judge(1000, &simulate(1000, &mut server, |_| FAST)), Verdict::Early { .. }));
        // 61 s later, every window is fresh: the second burst (shifted by 61 s) passes.
        let mut server = Calendar { limit: 1000, offset: 58.0 + 61.0, minute: 0, count: 1000 };
        assert_eq!(held(&judge(1000, &simulate(1000, &mut server, |_| FAST))).0, 1000);
        // A bucket an earlier run left half empty.
        let mut server = Bucket { limit: 1000.0, tokens: 500.0, last: 0.0 };
        assert!(matches!(judge(1000, &simulate(1000, &mut server, |_| FAST)), Verdict::Early { .. }));
    }

    #[test]
    fn a_limit_below_the_contract_is_an_early_refusal() {
        let calls = simulate(1000, &mut Below(900), |_| FAST);
        let v = judge(1000, &calls);
        assert!(matches!(v, Verdict::Early { served: 900, .. }), "{v:?}");
    }

    #[test]
    fn no_limit_is_caught_at_the_bound() {
        let calls = simulate(1000, &mut Unlimited { calls: 0, broken: None }, |_| FAST);
        let v = judge(1000, &calls);
        let Verdict::NoRefusal { sent, bound, .. } = v else { panic!("{v:?}") };
        assert!(sent > bound && sent <= bound + IN_FLIGHT + 1, "{v:?}");
        // A limit of twice the contract's, refusing only after 2100 calls: past the bound too.
        let v = judge(1000, &simulate(1000, &mut Below(2100), |_| FAST));
        assert!(matches!(v, Verdict::NoRefusal { .. }), "{v:?}");
    }

    #[test]
    fn a_call_neither_served_nor_refused_breaks_the_burst() {
        let calls = simulate(1000, &mut Unlimited { calls: 0, broken: Some(10) }, |_| FAST);
        assert_eq!(judge(1000, &calls), Verdict::Broken { index: 10 });
    }

    /// The run's calls before the burst on its pair and tool, made one at a time at `times`
    /// (seconds, negative) and answered after `FAST`: every third one a refusal of its arguments
    /// (a matrix's), which `server` counts when `counts_refused`.
    fn before(server: &mut dyn Limiter, times: &[f64], counts_refused: bool) -> Vec<EarlierCall> {
        times
            .iter()
            .enumerate()
            .map(|(k, &t)| {
                let refused = k % 3 == 2;
                let answer = if refused && !counts_refused {
                    Earlier::Refused
                } else {
                    match server.hit(t + FAST / 2.0) {
                        Answer::Limited => Earlier::Limited,
                        _ if refused => Earlier::Refused,
                        _ => Earlier::Served,
                    }
                };
                EarlierCall { answer, sent: t, answered: t + FAST }
            })
            .collect()
    }

    /// `n` calls evenly over the `span` seconds before the burst.
    fn spread(n: usize, span: f64) -> Vec<f64> {
        (0..n).map(|k| -span + k as f64 * span / n as f64).collect()
    }

    #[test]
    fn the_runs_earlier_calls_complete_the_reference_window() {
        for limit in [1000, 500] {
            for (n, span) in [(12, 3.0), (40, 30.0), (5, 0.5), (1, 0.02)] {
                let mut server = reference(limit);
                let earlier = before(&mut server, &spread(n, span), true);
                let calls = simulate(limit, &mut server, |_| FAST);
                // Judged alone, the burst looks refused early: the earlier calls are needed.
                let alone = judge(limit, &calls);
                assert_eq!(alone, Verdict::Early { served: limit - n, refused: limit - n + 1, earlier: 0 });
                let v = judge_after(limit, &earlier, &calls);
                assert_eq!(held(&v), (limit - n, Exactness::Exact), "{limit}, {n} in {span} s: {v:?}");
                assert!(matches!(v, Verdict::Held { earlier, .. } if earlier == n), "{v:?}");
                // A sliding window that counts every call looks the same.
                let mut server = sliding(limit);
                let earlier = before(&mut server, &spread(n, span), true);
                let v = judge_after(limit, &earlier, &simulate(limit, &mut server, |_| FAST));
                assert_eq!(held(&v).1, Exactness::Exact, "sliding, {limit}, {n} in {span} s: {v:?}");
            }
        }
    }

    /// Whatever the second the run starts, the window's kind, whether it counts failed calls and
    /// how the earlier calls spread: the limit holds (seed level); on the reference's window the
    /// burst is exact, or undecided with earlier calls counted (`steps::load` then judges a
    /// burst on a fresh window).
    #[test]
    fn with_earlier_calls_every_allowed_window_holds_whatever_the_second() {
        let shapes = [spread(12, 3.0), spread(30, 45.0), spread(6, 59.5), vec![-60.5, -30.0, -0.2]];
        for times in &shapes {
            for counts_refused in [true, false] {
                for quarter in 0..240 {
                    let offset = quarter as f64 / 4.0;
                    let mut server = calendar(1000, offset);
                    let earlier = before(&mut server, times, counts_refused);
                    let v = judge_after(1000, &earlier, &simulate(1000, &mut server, |_| FAST));
                    let (served, _) = held(&v);
                    assert!(served <= 2000, "calendar at {offset}: {v:?}");
                }
                let mut server = bucket(1000);
                let earlier = before(&mut server, times, counts_refused);
                held(&judge_after(1000, &earlier, &simulate(1000, &mut server, |_| FAST)));
                let mut server = sliding(1000);
                let earlier = before(&mut server, times, counts_refused);
                held(&judge_after(1000, &earlier, &simulate(1000, &mut server, |_| FAST)));
            }
            // The reference opens its window at the run's first call (no earlier run here): the
            // second the run started changes nothing.
            let mut server = reference(1000);
            let earlier = before(&mut server, times, true);
            let v = judge_after(1000, &earlier, &simulate(1000, &mut server, |_| FAST));
            let Verdict::Held { exact, earlier, .. } = &v else { panic!("{v:?}") };
            assert!(*exact == Exactness::Exact || *earlier > 0, "{times:?}: {v:?}");
        }
    }

    #[test]
    fn a_window_split_by_the_earlier_calls_is_never_taken_for_exact() {
        // The window the run's first call opened ends during the burst.
        for first in [-59.99, -59.9, -59.7, -59.5] {
            let mut server = reference(1000);
            let earlier = before(&mut server, &[first, -30.0, -1.0], true);
            let v = judge_after(1000, &earlier, &simulate(1000, &mut server, |_| FAST));
            let Verdict::Held { exact, earlier, .. } = &v else { panic!("{first}: {v:?}") };
            assert_ne!(*exact, Exactness::Exact, "{first}: {v:?}");
            assert!(*earlier > 0, "{first}: the burst is judged again on a fresh window: {v:?}");
        }
        // Inside one window: exact.
        let mut server = reference(1000);
        let earlier = before(&mut server, &[-55.0, -30.0, -1.0], true);
        let v = judge_after(1000, &earlier, &simulate(1000, &mut server, |_| FAST));
        assert_eq!(held(&v), (997, Exactness::Exact));
    }

    #[test]
    fn an_earlier_runs_window_the_run_does_not_know_is_early_or_undecided() {
        // An earlier run opened the window `ago` seconds before the burst and made `count` calls
        // in it; this run's calls follow. Never exact: refused early (then waited for), or held
        // with earlier calls (then judged again on a fresh window).
        for ago in [59.99, 59.8, 59.5, 58.0, 40.0, 5.0] {
            for count in [1, 10, 500, 1000] {
                let mut server = Reference { limit: 1000, start: Some(-ago), count };
                let earlier = before(&mut server, &spread(4, 2.0), true);
                let v = judge_after(1000, &earlier, &simulate(1000, &mut server, |_| FAST));
                match &v {
                    Verdict::Early { .. } => {}
                    Verdict::Held { exact, earlier, .. } => {
                        assert!(*exact != Exactness::Exact && *earlier > 0, "{ago} s, {count}: {v:?}")
                    }
                    other => panic!("{ago} s, {count}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn after_a_refusal_for_the_rate_the_window_counts_from_the_next_call() {
        // A rerun: an earlier run's window, full, ends 5 s before the burst; this run's calls
        // were refused in it, then served in a new one.
        let mut server = Reference { limit: 1000, start: Some(-65.0), count: 1000 };
        let earlier = before(&mut server, &[-20.0, -15.0, -4.0, -3.0, -2.5], true);
        assert_eq!(earlier.iter().filter(|c| c.answer == Earlier::Limited).count(), 2);
        let v = judge_after(1000, &earlier, &simulate(1000, &mut server, |_| FAST));
        assert_eq!(held(&v), (997, Exactness::Exact), "{v:?}");
        assert!(matches!(v, Verdict::Held { earlier: 3, .. }), "{v:?}");
    }

    #[test]
    fn an_earlier_call_without_a_tool_result_leaves_the_window_uncertain() {
        let mut server = reference(1000);
        let mut earlier = before(&mut server, &spread(6, 3.0), true);
        earlier[4].answer = Earlier::Unknown;
        let v = judge_after(1000, &earlier, &simulate(1000, &mut server, |_| FAST));
        assert!(matches!(v, Verdict::Held { exact: Exactness::Uncertain(1), earlier: 6, .. }), "{v:?}");
    }

    #[test]
    fn earlier_calls_do_not_hide_a_limit_below_the_contract() {
        // 990 a minute, every call counted: 12 earlier calls, 978 in the burst.
        let mut server = Below(990);
        let earlier = before(&mut server, &spread(12, 3.0), true);
        let v = judge_after(1000, &earlier, &simulate(1000, &mut server, |_| FAST));
        assert_eq!(v, Verdict::Early { served: 990, refused: 979, earlier: 12 });
        // Calls out of every window by the refusal count for nothing: a sliding window of 950
        // that 100 calls 62–70 s before the burst filled is refused early still.
        let mut server = sliding(950);
        let earlier = before(
            &mut server,
            &spread(100, 70.0).into_iter().map(|t| t * 8.0 / 70.0 - 62.0).collect::<Vec<_>>(),
            true,
        );
        let v = judge_after(1000, &earlier, &simulate(1000, &mut server, |_| FAST));
        assert!(matches!(v, Verdict::Early { served: 950, earlier: 0, .. }), "{v:?}");
        // No limit: the bound is the burst's, earlier calls or not.
        let mut server = Unlimited { calls: 0, broken: None };
        let earlier = before(&mut server, &spread(12, 3.0), true);
        let v = judge_after(1000, &earlier, &simulate(1000, &mut server, |_| FAST));
        assert!(matches!(v, Verdict::NoRefusal { .. }), "{v:?}");
    }
}
