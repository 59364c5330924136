//! `--budget`: how much fuzzing a run may do, as a number of tool calls (`200calls`) or a
//! duration (`60s`). Every call counts, retries and shrinking included, so a budget bounds the
//! load put on the server as well as the run's length.

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

/// The default: enough for every tool and every kind of mutation once on a contract server.
pub const DEFAULT: Budget = Budget::Calls(200);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    Calls(u64),
    Time(Duration),
}

impl std::str::FromStr for Budget {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> anyhow::Result<Budget> {
        let text = text.trim();
        let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
        let n: u64 =
            digits.parse().with_context(|| format!("--budget {text}: expected e.g. 200calls or 60s"))?;
        if n == 0 {
            bail!("--budget {text}: must be more than zero");
        }
        match unit {
            "calls" | "call" => Ok(Budget::Calls(n)),
            "s" => Ok(Budget::Time(Duration::from_secs(n))),
            "m" | "min" => Ok(Budget::Time(Duration::from_secs(n * 60))),
            _ => bail!("--budget {text}: the unit is `calls`, `s` or `min` (e.g. 200calls, 60s)"),
        }
    }
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Budget::Calls(n) => write!(f, "{n}calls"),
            Budget::Time(d) => write!(f, "{}s", d.as_secs()),
        }
    }
}

/// What is left of a budget while a run spends it.
#[derive(Debug)]
pub struct Meter {
    budget: Budget,
    started: Instant,
    pub calls: u64,
    /// Calls past the budget are allowed (the rate-limit burst, added after it): never spent.
    pub lifted: bool,
}

impl Meter {
    pub fn new(budget: Budget) -> Meter {
        Meter { budget, started: Instant::now(), calls: 0, lifted: false }
    }

    pub fn budget(&self) -> Budget {
        self.budget
    }

    pub fn spent(&self) -> bool {
        if self.lifted {
            return false;
        }
        match self.budget {
            Budget::Calls(n) => self.calls >= n,
            Budget::Time(d) => self.started.elapsed() >= d,
        }
    }

    /// Calls left, if the budget counts calls (a time budget says "many").
    pub fn calls_left(&self) -> u64 {
        match self.budget {
            Budget::Calls(n) => n.saturating_sub(self.calls),
            Budget::Time(_) if self.spent() => 0,
            Budget::Time(_) => u64::MAX,
        }
    }

    /// Time left of a time budget (a call budget has no end in time).
    pub fn time_left(&self) -> Duration {
        match self.budget {
            Budget::Calls(_) => Duration::MAX,
            Budget::Time(d) => d.saturating_sub(self.started.elapsed()),
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_parse_with_their_unit() {
        assert_eq!("200calls".parse::<Budget>().unwrap(), Budget::Calls(200));
        assert_eq!("60s".parse::<Budget>().unwrap(), Budget::Time(Duration::from_secs(60)));
        assert_eq!("2min".parse::<Budget>().unwrap(), Budget::Time(Duration::from_secs(120)));
        for bad in ["", "calls", "0calls", "12", "5h", "-3s"] {
            assert!(bad.parse::<Budget>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_call_budget_is_spent_by_calls() {
        let mut m = Meter::new(Budget::Calls(2));
        assert!(!m.spent());
        m.calls = 2;
        assert!(m.spent());
        assert_eq!(m.calls_left(), 0);
    }
}
