//! The truth checker: every answer the SDK gave (each call, resends included) and the journal
//! state it left, compared with what the sandbox holds.
//!
//! A false report is one of:
//! - accepted (or confirmed) when the sandbox holds no such transaction;
//! - refused or nothing sent when the sandbox holds it;
//! - a confirmation that carries another request's transfer;
//! - a journal state that is not the one the verdict maps to (the command's exit code is a
//!   function of the same verdict, so this is the exit code disagreeing with the journal).
//!
//! Pending and unknown are never false: they claim nothing.

use std::collections::HashMap;
use std::fmt;

use whish::core::verdict::Verdict;
use whish::journal::State;
use whish_sandbox::Sandbox;

/// The money-moving operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Transfer send (key: the Request-id).
    Send,
    /// Transfer cancel (key: the transfer's Request-id).
    Cancel,
    /// Collect create (key: the externalId).
    Create,
    /// Collect refund (key: the payment's externalId).
    Refund,
    /// Top-up pay (key: the externalId).
    Pay,
}

impl Op {
    const ALL: [Op; 5] = [Op::Send, Op::Cancel, Op::Create, Op::Refund, Op::Pay];

    fn name(self) -> &'static str {
        match self {
            Op::Send => "transfer send",
            Op::Cancel => "transfer cancel",
            Op::Create => "collect create",
            Op::Refund => "collect refund",
            Op::Pay => "top-up pay",
        }
    }
}

/// What one call reported.
#[derive(Debug, Clone)]
pub struct Report {
    /// The operation.
    pub op: Op,
    /// Its key at the sandbox.
    pub key: String,
    /// The SDK's verdict.
    pub verdict: Verdict,
    /// The transfer a confirmation (or a send) named, to compare with the sandbox's.
    pub transfer_id: Option<String>,
    /// The journal state after the call, and whether this call met the entry already there
    /// (a resend: nothing sent then leaves the entry as it was).
    pub journal: Option<(State, bool)>,
}

/// One operation's line of the table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    /// Calls reported.
    pub calls: usize,
    /// By verdict: accepted, refused, pending, unknown, not sent.
    pub verdicts: [usize; 5],
    /// False reports.
    pub false_reports: usize,
    /// Journal states that disagree with the verdict.
    pub journal_disagrees: usize,
}

/// The table, one row per operation, and the first few false reports spelled out.
pub struct Table {
    rows: Vec<(Op, Row)>,
    /// A few false reports, for the reader.
    pub examples: Vec<String>,
}

impl Table {
    /// False reports and journal disagreements in all.
    pub fn falsehoods(&self) -> usize {
        self.rows
            .iter()
            .map(|(_, r)| r.false_reports + r.journal_disagrees)
            .sum()
    }
}

/// What the sandbox holds for a key: applied or not, and for a send its transfer id.
struct Truth {
    applied: bool,
    transfer_id: Option<String>,
}

fn index(v: Verdict) -> usize {
    match v {
        Verdict::Accepted => 0,
        Verdict::Refused => 1,
        Verdict::Pending => 2,
        Verdict::Unknown => 3,
        _ => 4,
    }
}

/// Compare every report with the sandbox.
pub fn check(sb: &Sandbox, reports: &[Report]) -> Table {
    let transfers = sb.transfers();
    let payments = sb.payments();
    let sales = sb.sales();
    let mut truth: HashMap<(Op, String), Truth> = HashMap::new();
    for t in &transfers {
        truth.insert(
            (Op::Send, t.request_id.to_string()),
            Truth {
                applied: true,
                transfer_id: Some(t.transfer_id.clone()),
            },
        );
        truth.insert(
            (Op::Cancel, t.request_id.to_string()),
            Truth {
                applied: t.status == "CANCELED_FULL",
                transfer_id: None,
            },
        );
    }
    for p in &payments {
        truth.insert(
            (Op::Create, p.external_id.clone()),
            Truth {
                applied: true,
                transfer_id: None,
            },
        );
        truth.insert(
            (Op::Refund, p.external_id.clone()),
            Truth {
                applied: p.collect_status == "refunded",
                transfer_id: None,
            },
        );
    }
    for s in &sales {
        truth.insert(
            (Op::Pay, s.external_id.clone()),
            Truth {
                applied: true,
                transfer_id: None,
            },
        );
    }
    let mut rows: HashMap<Op, Row> = HashMap::new();
    let mut examples = Vec::new();
    for r in reports {
        let row = rows.entry(r.op).or_default();
        row.calls += 1;
        row.verdicts[index(r.verdict)] += 1;
        let held = truth.get(&(r.op, r.key.clone()));
        let applied = held.is_some_and(|t| t.applied);
        let why = match r.verdict {
            Verdict::Accepted if !applied => Some("accepted, and the sandbox holds nothing"),
            Verdict::Accepted
                if r.transfer_id.is_some()
                    && held.and_then(|t| t.transfer_id.as_ref()) != r.transfer_id.as_ref() =>
            {
                Some("a confirmation carrying another request's transfer")
            }
            Verdict::Refused | Verdict::NothingSent if applied => {
                Some("refused or not sent, and the sandbox holds it")
            }
            _ => None,
        };
        if let Some(why) = why {
            row.false_reports += 1;
            if examples.len() < 10 {
                examples.push(format!("{} {}: {why} ({:?})", r.op.name(), r.key, r));
            }
        }
        if let Some((state, resend)) = r.journal {
            let expected = match r.verdict {
                // A resend that sent nothing leaves its entry as it was.
                Verdict::NothingSent if resend => None,
                v => Some(State::of_verdict(v)),
            };
            // An open verdict claims nothing: a recovery racing the caller may have settled the
            // entry before it was read back.
            let settled_meanwhile = r.verdict.is_open() && state.is_final();
            // A call that met its entry already there and answered an open verdict may not have
            // written the entry at all (another process held it: "sending it now, outcome
            // unknown"); the entry then keeps the open state of the last answer the service gave
            // (Pending). Both say "keep the key"; neither claims an outcome.
            let open_both = resend && r.verdict.is_open() && state.is_open();
            if expected.is_some_and(|e| e != state) && !settled_meanwhile && !open_both {
                row.journal_disagrees += 1;
                if examples.len() < 10 {
                    examples.push(format!(
                        "{} {}: verdict {} but the journal says {state}",
                        r.op.name(),
                        r.key,
                        r.verdict
                    ));
                }
            }
        }
    }
    Table {
        rows: Op::ALL
            .iter()
            .map(|op| (*op, rows.remove(op).unwrap_or_default()))
            .collect(),
        examples,
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<16} {:>6} {:>9} {:>8} {:>8} {:>8} {:>9} {:>14} {:>18}",
            "answers",
            "calls",
            "accepted",
            "refused",
            "pending",
            "unknown",
            "not-sent",
            "false reports",
            "journal disagrees"
        )?;
        let mut total = Row::default();
        let line = |f: &mut fmt::Formatter<'_>, name: &str, r: &Row| {
            writeln!(
                f,
                "{:<16} {:>6} {:>9} {:>8} {:>8} {:>8} {:>9} {:>14} {:>18}",
                name,
                r.calls,
                r.verdicts[0],
                r.verdicts[1],
                r.verdicts[2],
                r.verdicts[3],
                r.verdicts[4],
                r.false_reports,
                r.journal_disagrees
            )
        };
        for (op, r) in &self.rows {
            line(f, op.name(), r)?;
            total.calls += r.calls;
            for i in 0..5 {
                total.verdicts[i] += r.verdicts[i];
            }
            total.false_reports += r.false_reports;
            total.journal_disagrees += r.journal_disagrees;
        }
        line(f, "total", &total)?;
        for e in &self.examples {
            writeln!(f, "  FALSE: {e}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_covers_every_verdict() {
        let mut seen = [false; 5];
        for v in Verdict::ALL {
            seen[index(v)] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }
}
