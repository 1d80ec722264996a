//! What the receiver soak's log shows at the end, against what the sandbox holds: each change
//! handed on or lost, each key handled twice inside the documented window or not, and how often
//! each class of fault was injected.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use whish_sandbox::Sandbox;

use super::{LEASE, Shared, lock};

/// Each key handed on, with the (pid, ms) of every hand-on.
pub(super) type Handed = HashMap<String, Vec<(u32, u64)>>;

/// The keys handed on, and the handler faults (failed, panicked, hung).
pub(super) fn read_log(path: &Path) -> (Handed, (usize, usize, usize)) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut handled: Handed = HashMap::new();
    let mut faults = (0, 0, 0);
    for line in text.lines() {
        let mut parts = line.splitn(3, ' ');
        let (Some(pid), Some(at), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        match rest.split_once(' ') {
            Some(("!failed", _)) => faults.0 += 1,
            Some(("!panicked", _)) => faults.1 += 1,
            Some(("!hung", _)) => faults.2 += 1,
            _ => handled
                .entry(rest.to_owned())
                .or_default()
                .push((pid.parse().unwrap_or(0), at.parse().unwrap_or(0))),
        }
    }
    (handled, faults)
}

/// What must have been handed on: each collected transfer as RECEIVED; each paid link as paid
/// or (a refund before the status read) refunded; each link with only failed attempts as
/// pending. Each entry lists the keys any of which is enough.
pub(super) fn expected(sb: &Sandbox) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for t in sb.transfers() {
        if t.status == "RECEIVED" && t.payment_mode == "CASH_COLLECTION" {
            out.push(vec![format!("transfer:{}:RECEIVED", t.transfer_id)]);
        }
    }
    let failed: HashSet<String> = sb
        .callbacks()
        .into_iter()
        .filter(|d| d.kind == "collect.failure")
        .filter_map(|d| {
            url::Url::parse(&d.url).ok().and_then(|u| {
                u.query_pairs()
                    .find(|(k, _)| k == "externalId")
                    .map(|(_, v)| v.into_owned())
            })
        })
        .collect();
    for p in sb.payments() {
        let id = &p.external_id;
        match p.collect_status.as_str() {
            "success" | "refunded" => out.push(vec![
                format!("collect:{id}:success"),
                format!("collect:{id}:refunded"),
            ]),
            "pending" if failed.contains(id) => out.push(vec![format!("collect:{id}:pending")]),
            _ => {}
        }
    }
    out
}

/// How many of the `expected` changes have none of their keys handed on.
pub(super) fn missing(expected: &[Vec<String>], handled: &Handed) -> usize {
    expected
        .iter()
        .filter(|alts| !alts.iter().any(|k| handled.contains_key(k)))
        .count()
}

/// The soak's outcome: the changes lost, the keys handled twice and why, the faults injected.
pub(super) struct Outcome {
    changes: usize,
    lost: usize,
    twice: usize,
    by_kill: usize,
    by_outage: usize,
    classes: [(&'static str, usize); 8],
}

impl Outcome {
    /// Read the log at `path` and judge it against the `expected` changes and the faults that
    /// `shared` recorded.
    pub(super) fn read(path: &Path, expected: &[Vec<String>], shared: &Shared) -> Outcome {
        let (handled, handler_faults) = read_log(path);
        let lost = missing(expected, &handled);
        let twice: Vec<&Vec<(u32, u64)>> = handled.values().filter(|seen| seen.len() > 1).collect();
        let kills = lock(&shared.windows.kills).clone();
        let outages = lock(&shared.windows.outages).clone();
        let (by_kill, by_outage) = inside_window(&twice, &kills, &outages);
        let injected = &shared.injected;
        let classes = [
            (
                "receivers killed with SIGKILL",
                injected.kills.load(Ordering::SeqCst),
            ),
            ("journal outages", injected.outages.load(Ordering::SeqCst)),
            (
                "status reads failing (503 pages)",
                injected.status_failing.load(Ordering::SeqCst),
            ),
            (
                "status reads slow (1.5 s)",
                injected.status_slow.load(Ordering::SeqCst),
            ),
            ("handlers failing", handler_faults.0),
            ("handlers panicking", handler_faults.1),
            ("handlers hanging", handler_faults.2),
            (
                "redeliveries by the service",
                injected.redeliveries.load(Ordering::SeqCst),
            ),
        ];
        Outcome {
            changes: expected.len(),
            lost,
            twice: twice.len(),
            by_kill,
            by_outage,
            classes,
        }
    }

    /// The classes of fault never injected.
    fn never(&self) -> Vec<&'static str> {
        self.classes
            .iter()
            .filter(|(_, n)| *n == 0)
            .map(|(name, _)| *name)
            .collect()
    }

    /// Print the faults injected, the changes handed on, lost and handled twice, and `elapsed`.
    pub(super) fn print(&self, elapsed: Duration) {
        println!("faults injected:");
        for (name, n) in self.classes {
            println!("  {name}: {n}");
        }
        let handed = self.changes - self.lost;
        println!(
            "changes {}, handed on {handed}, lost {}, handled twice {} (inside the window {})",
            self.changes,
            self.lost,
            self.twice,
            self.by_kill + self.by_outage
        );
        println!(
            "  inside the window: {} handed on by a process killed before its mark, {} while the journal was unreachable",
            self.by_kill, self.by_outage
        );
        println!("{:.1} s", elapsed.as_secs_f64());
        let never = self.never();
        if !never.is_empty() {
            println!("FAILED: never injected: {}", never.join(", "));
        }
    }

    /// Nothing lost, every key handled twice inside the window, every class of fault injected.
    pub(super) fn passed(&self) -> bool {
        self.lost == 0 && self.twice == self.by_kill + self.by_outage && self.never().is_empty()
    }
}

/// Of the keys handed on twice (each with its hand-ons in order), how many are inside the
/// window because the first hand-on's process was killed after it, and how many because the
/// journal was unreachable from then until the mark was due (a lease and a little later).
fn inside_window(
    twice: &[&Vec<(u32, u64)>],
    kills: &[(u32, u64)],
    outages: &[(u64, u64)],
) -> (usize, usize) {
    let (mut by_kill, mut by_outage) = (0, 0);
    for seen in twice {
        let (pid, at) = seen[0];
        if kills.iter().any(|(p, when)| *p == pid && *when >= at) {
            by_kill += 1;
        } else if outages
            .iter()
            .any(|(from, to)| *from <= at + LEASE.as_millis() as u64 * 2 && *to >= at)
        {
            by_outage += 1;
        }
    }
    (by_kill, by_outage)
}
