//! Comparing what the caller believes with what the sandbox holds.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;

use whish_sandbox::Sandbox;

use crate::run::{Belief, Ledger};

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Row {
    /// The operation.
    pub name: &'static str,
    /// Operations the caller intended (each with its own key).
    pub intended: usize,
    /// Intended operations the sandbox shows as applied.
    pub created: usize,
    /// Records beyond the first for one key, plus records under keys nobody intended.
    pub duplicates: usize,
    /// The caller believes it happened and the sandbox has nothing, or the caller believes it
    /// did not happen and the sandbox applied it.
    pub lost: usize,
    /// The caller still does not know, after resending and asking for the status.
    pub unresolved: usize,
}

/// Compare beliefs keyed by `K` with how many records the sandbox holds per key (`applied`
/// counts, for state changes, 1 when the state shows the change).
pub(crate) fn row<K: Eq + Hash>(
    name: &'static str,
    beliefs: &[(K, Belief)],
    mut applied: HashMap<K, usize>,
) -> Row {
    let mut r = Row {
        name,
        intended: beliefs.len(),
        ..Row::default()
    };
    for (key, belief) in beliefs {
        let n = applied.remove(key).unwrap_or(0);
        r.created += usize::from(n > 0);
        r.duplicates += n.saturating_sub(1);
        match belief {
            Belief::Done if n == 0 => r.lost += 1,
            Belief::NotDone if n > 0 => r.lost += 1,
            Belief::Unknown => r.unresolved += 1,
            _ => {}
        }
    }
    // Whatever is left was applied under a key the caller never held.
    r.duplicates += applied.values().sum::<usize>();
    r
}

pub(crate) fn counts<K: Eq + Hash>(keys: impl IntoIterator<Item = K>) -> HashMap<K, usize> {
    let mut m = HashMap::new();
    for k in keys {
        *m.entry(k).or_insert(0) += 1;
    }
    m
}

fn lock<T: Clone>(m: &std::sync::Mutex<T>) -> T {
    m.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The table: one row per state-changing operation.
pub fn reconcile(sb: &Sandbox, l: &Ledger) -> Vec<Row> {
    let transfers = sb.transfers();
    let payments = sb.payments();
    let sends = lock(&l.sends);
    let cancels = lock(&l.cancels);
    let creates = lock(&l.creates);
    let refunds = lock(&l.refunds);
    let pays = lock(&l.pays);
    let cancelled = counts(
        transfers
            .iter()
            .filter(|t| t.status == "CANCELED_FULL")
            .map(|t| t.request_id),
    );
    let refunded = counts(
        payments
            .iter()
            .filter(|p| p.collect_status == "refunded")
            .map(|p| p.external_id.clone()),
    );
    vec![
        row(
            "transfer send",
            &sends,
            counts(transfers.iter().map(|t| t.request_id)),
        ),
        row("transfer cancel", &cancels, cancelled),
        row(
            "collect create",
            &creates,
            counts(payments.iter().map(|p| p.external_id.clone())),
        ),
        row("collect refund", &refunds, refunded),
        row(
            "top-up pay",
            &pays,
            counts(sb.sales().into_iter().map(|s| s.external_id)),
        ),
    ]
}

/// The printed table.
pub struct Table<'a>(pub &'a [Row]);

impl fmt::Display for Table<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = |f: &mut fmt::Formatter<'_>, r: &Row| {
            writeln!(
                f,
                "{:<16} {:>9} {:>8} {:>11} {:>5} {:>11}",
                r.name, r.intended, r.created, r.duplicates, r.lost, r.unresolved
            )
        };
        writeln!(
            f,
            "{:<16} {:>9} {:>8} {:>11} {:>5} {:>11}",
            "operation", "intended", "created", "duplicates", "lost", "unresolved"
        )?;
        for r in self.0 {
            line(f, r)?;
        }
        line(f, &total(self.0))
    }
}

/// The sum of the rows.
pub fn total(rows: &[Row]) -> Row {
    rows.iter().fold(
        Row {
            name: "total",
            ..Row::default()
        },
        |mut t, r| {
            t.intended += r.intended;
            t.created += r.created;
            t.duplicates += r.duplicates;
            t.lost += r.lost;
            t.unresolved += r.unresolved;
            t
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_counts_each_disagreement_once() {
        let beliefs = vec![
            (1, Belief::Done),    // applied once: fine
            (2, Belief::Done),    // applied twice: a duplicate
            (3, Belief::Done),    // never applied: lost
            (4, Belief::NotDone), // applied: lost (the caller would retry with a new key)
            (5, Belief::NotDone), // not applied: fine
            (6, Belief::Unknown), // unresolved
        ];
        let applied = counts([1, 2, 2, 4, 9]); // 9: a key nobody intended
        let r = row("x", &beliefs, applied);
        assert_eq!(
            (r.intended, r.created, r.duplicates, r.lost, r.unresolved),
            (6, 3, 2, 2, 1)
        );
    }
}
