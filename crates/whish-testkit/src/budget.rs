//! Performance budgets: each bench records its figures, with their goals, to the file named by
//! `WHISH_BENCH_RECORD` (one tab-separated line per figure: bench, label, value, goal), and
//! `cargo xtask bench-budget` fails when a figure is more than [`SLACK`] past its goal.

use std::io::Write as _;

/// What a figure must be to meet its goal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    /// The figure is at most this (a latency ratio, a cost in journal writes).
    AtMost(f64),
    /// The figure is at least this (a throughput ratio).
    AtLeast(f64),
    /// Shown for information, no goal.
    None,
}

/// How far past its goal a figure may read before the budget check fails: 10 % of the goal.
/// Together with the median over interleaved rounds and a second run before failing, it keeps
/// the noise of a shared machine (single rounds spread about ±5 %) out of the verdict.
pub const SLACK: f64 = 0.10;

impl Goal {
    /// Whether `value` meets the goal (`None`: no goal).
    pub fn met(self, value: f64) -> Option<bool> {
        match self {
            Goal::AtMost(g) => Some(value <= g),
            Goal::AtLeast(g) => Some(value >= g),
            Goal::None => None,
        }
    }

    /// The budget: the goal moved [`SLACK`] of itself the lenient way.
    pub fn budget(self) -> Goal {
        match self {
            Goal::AtMost(g) => Goal::AtMost(g * (1.0 + SLACK)),
            Goal::AtLeast(g) => Goal::AtLeast(g * (1.0 - SLACK)),
            Goal::None => Goal::None,
        }
    }

    /// Whether `value` is within the [`budget`](Self::budget) (`None`: no goal).
    pub fn within_budget(self, value: f64) -> Option<bool> {
        self.budget().met(value)
    }

    /// The goal as text: `<= 1.02`, `>= 0.98`, `-`.
    pub fn text(self) -> String {
        match self {
            Goal::AtMost(g) => format!("<= {g}"),
            Goal::AtLeast(g) => format!(">= {g}"),
            Goal::None => "-".to_owned(),
        }
    }

    /// Read a goal back from [`text`](Self::text).
    pub fn parse(text: &str) -> Option<Goal> {
        let text = text.trim();
        if text == "-" {
            return Some(Goal::None);
        }
        let (op, value) = text.split_once(' ')?;
        let value: f64 = value.trim().parse().ok()?;
        match op {
            "<=" => Some(Goal::AtMost(value)),
            ">=" => Some(Goal::AtLeast(value)),
            _ => None,
        }
    }
}

/// Record one figure for the budget check, when `WHISH_BENCH_RECORD` names a file (appended).
pub fn record(bench: &str, label: &str, value: f64, goal: Goal) {
    let Some(path) = std::env::var_os("WHISH_BENCH_RECORD") else {
        return;
    };
    let line = format!(
        "{}\t{}\t{value}\t{}\n",
        bench.replace('\t', " "),
        label.replace('\t', " "),
        goal.text()
    );
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "cannot record the figure in {}: {e}",
            path.to_string_lossy()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_is_within_budget_up_to_ten_per_cent_past_its_goal() {
        assert_eq!(Goal::AtMost(1.02).within_budget(1.12), Some(true));
        assert_eq!(Goal::AtMost(1.02).within_budget(1.13), Some(false));
        assert_eq!(Goal::AtLeast(0.98).within_budget(0.89), Some(true));
        assert_eq!(Goal::AtLeast(0.98).within_budget(0.88), Some(false));
        assert_eq!(Goal::None.within_budget(9.0), None);
        for g in [Goal::AtMost(1.2), Goal::AtLeast(0.8), Goal::None] {
            assert_eq!(Goal::parse(&g.text()), Some(g));
        }
    }
}
