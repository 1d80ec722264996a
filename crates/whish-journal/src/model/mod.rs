//! The journal's model checker: every interleaving, within bounds, of the processes and people
//! working on one request, against a model service, with faults at every step; the invariants
//! checked in every state reached. Run it with `cargo xtask model`; docs/journal.md says what
//! it proves and what it assumes.
//!
//! Only with the feature `model` (which turns on `lies`): no shipped build has it.

mod explore;
mod inbox;
mod repeats;
mod world;

use std::time::Instant;

use whish_core::lies::{self, Lie};

/// How far the checker looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Tasks of the sending process that send the same request at once.
    pub tasks: u8,
    /// Runs of `journal recover` (in another PID namespace of a host with the same name).
    pub recoveries: u8,
    /// A person also runs a retry of the entries waiting for them, and an abandon.
    pub person: bool,
    /// The recovery deadline may pass.
    pub deadline: bool,
    /// Faults in one run: a crash, a lost reply or request, a proxy's page, a failed
    /// connection, a journal write that fails or commits with its answer lost, a holder
    /// frozen past its lease.
    pub faults: u8,
    /// The most distinct states explored.
    pub limit: usize,
}

impl Bounds {
    /// What CI runs: a few minutes at most on two cores.
    pub const CI: Bounds = Bounds {
        tasks: 2,
        recoveries: 2,
        person: true,
        deadline: true,
        faults: 2,
        limit: 5_000_000,
    };

    /// The larger bound docs/journal.md reports.
    pub const LARGE: Bounds = Bounds {
        tasks: 2,
        recoveries: 2,
        person: true,
        deadline: true,
        faults: 3,
        limit: 20_000_000,
    };
}

impl std::fmt::Display for Bounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} sending task(s) of one process, {} recovery run(s) in another PID namespace{}{}, at most {} fault(s), at most {} states",
            self.tasks,
            self.recoveries,
            if self.person {
                ", a person's retry and abandon"
            } else {
                ""
            },
            if self.deadline {
                ", the deadline passing"
            } else {
                ""
            },
            self.faults,
            self.limit
        )
    }
}

/// What one system's exploration found.
#[derive(Debug, Clone)]
pub struct Part {
    /// Which system: the inbox, the send path, or the repeat check.
    pub name: &'static str,
    /// Distinct states explored.
    pub states: usize,
    /// Steps taken.
    pub steps: usize,
    /// The longest shortest path to a state.
    pub depth: usize,
    /// True when the state limit cut the search short.
    pub cut: bool,
    /// The first violation and its trace.
    pub violation: Option<(String, Vec<String>)>,
}

/// What one check found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The bounds.
    pub bounds: Bounds,
    /// The lie turned on, if any.
    pub lie: Option<Lie>,
    /// Each system explored: the inbox, the send path, then the repeat check.
    pub parts: Vec<Part>,
    /// How long it took.
    pub elapsed: std::time::Duration,
}

impl Report {
    /// Distinct states explored, over every system.
    pub fn states(&self) -> usize {
        self.parts.iter().map(|p| p.states).sum()
    }

    /// The first violation found, and in which system.
    pub fn violation(&self) -> Option<(&'static str, &(String, Vec<String>))> {
        self.parts
            .iter()
            .find_map(|p| p.violation.as_ref().map(|v| (p.name, v)))
    }

    /// True when a state limit cut a search short.
    pub fn cut(&self) -> bool {
        self.parts.iter().any(|p| p.cut)
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "bounds: {}", self.bounds)?;
        if let Some(lie) = self.lie {
            writeln!(f, "lie on: {}", lie.name())?;
        }
        for p in &self.parts {
            writeln!(
                f,
                "{}: {} states, {} steps, depth {}{}",
                p.name,
                p.states,
                p.steps,
                p.depth,
                if p.cut {
                    " (cut at the state limit: not complete)"
                } else {
                    ""
                }
            )?;
        }
        writeln!(
            f,
            "{} states in all, {:.1} s",
            self.states(),
            self.elapsed.as_secs_f64()
        )?;
        match self.violation() {
            None => writeln!(f, "0 violations"),
            Some((name, (what, trace))) => {
                writeln!(f, "1 violation ({name}): {what}")?;
                for (i, step) in trace.iter().enumerate() {
                    writeln!(f, "  {:>2}. {step}", i + 1)?;
                }
                Ok(())
            }
        }
    }
}

fn part<S: explore::System>(name: &'static str, system: &S, limit: usize) -> Part {
    let found = explore::explore(system, limit);
    Part {
        name,
        states: found.states,
        steps: found.steps,
        depth: found.depth,
        cut: found.cut,
        violation: found.violation,
    }
}

/// Explore within `bounds`, with `lie` turned on (for this process) while it runs: the inbox
/// (two receivers on one journal, the change delivered up to three times), the send path, then
/// the repeat check (two sends and a resend of one body under Request-ids of their own).
pub fn check(bounds: Bounds, lie: Option<Lie>) -> Report {
    lies::set(lie);
    let started = Instant::now();
    let mut parts = vec![part(
        "inbox",
        &inbox::Inbox {
            receivers: 2,
            deliveries: 3,
            faults: bounds.faults,
        },
        bounds.limit,
    )];
    // A violation found is reported alone: the next system is not explored.
    if parts[0].violation.is_none() {
        parts.push(part("send path", &world::Model { bounds }, bounds.limit));
    }
    // Sends of one body under Request-ids of their own: two sends and a resend, from nothing
    // recorded, then each from an entry of its own recorded as never sent.
    for (name, never_left_first) in [
        ("repeat check", false),
        ("repeat check, rows left unsent", true),
    ] {
        if parts.iter().any(|p| p.violation.is_some()) {
            break;
        }
        parts.push(part(
            name,
            &repeats::Repeats {
                kinds: vec![
                    repeats::Kind::Send,
                    repeats::Kind::Send,
                    repeats::Kind::Resend,
                ],
                faults: bounds.faults,
                locked: true,
                lapses: true,
                on_lock_session: true,
                never_left_first,
                reopened_under_lock: true,
                trusts_any_failure: false,
            },
            bounds.limit,
        ));
    }
    lies::set(None);
    Report {
        bounds,
        lie,
        parts,
        elapsed: started.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Bounds = Bounds {
        tasks: 2,
        recoveries: 1,
        person: true,
        deadline: true,
        faults: 2,
        limit: 2_000_000,
    };

    #[test]
    fn the_journal_keeps_every_invariant_within_small_bounds() {
        let report = check(SMALL, None);
        assert!(report.violation().is_none(), "{report}");
        assert!(!report.cut(), "{report}");
        assert!(report.parts.iter().all(|p| p.states > 100), "{report}");
    }
}
