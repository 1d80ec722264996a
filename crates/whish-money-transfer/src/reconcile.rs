//! Reconciliation with the activity log and the statement.
//!
//! - [`latest_states`] folds the activity event log into the latest state of each transfer (a
//!   cancelled transfer shows twice, SENT then CANCELLED; CANCELLED is CANCELED_FULL elsewhere).
//! - [`in_time_order`] gives a statement's lines in time order (the spec gives no order).
//! - [`check_balance_rule`] checks balance = previous + debit - credit on every line, in time
//!   order, to the currency's smallest unit (the service keeps doubles: `9954.800000000001` is
//!   9954.80) without letting such differences add up, and reports the first line that breaks it.
//! - [`match_by_request_id`] pairs activity events and statement lines through `requestId`.

use std::collections::BTreeMap;

use whish_core::{Amount, DateTime, RequestId};

use crate::model::{ActivityEntry, CurrencyStatement, StatementLine, TransferStatus};

/// The latest known state of one transfer, from the activity log.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LatestState {
    /// Transfer id.
    pub transfer_id: String,
    /// The Request-id of the create.
    pub request_id: Option<RequestId>,
    /// The latest status, in the status endpoint's vocabulary (CANCELLED is CANCELED_FULL).
    pub status: TransferStatus,
    /// When it reached that status.
    pub date: DateTime,
    /// How many events the log holds for it.
    pub events: usize,
}

/// Fold the event log into the latest state per transfer id. Events are ordered by date; events
/// with the same date keep the log's order.
pub fn latest_states(activity: &[ActivityEntry]) -> BTreeMap<String, LatestState> {
    let mut ordered: Vec<&ActivityEntry> = activity.iter().collect();
    ordered.sort_by_key(|e| e.date);
    let mut out: BTreeMap<String, LatestState> = BTreeMap::new();
    for e in ordered {
        let events = out.get(&e.id).map_or(0, |s| s.events) + 1;
        out.insert(
            e.id.clone(),
            LatestState {
                transfer_id: e.id.clone(),
                request_id: e
                    .request_id
                    .or_else(|| out.get(&e.id).and_then(|s| s.request_id)),
                status: e.status.as_transfer_status(),
                date: e.date,
                events,
            },
        );
    }
    out
}

/// A statement line that breaks balance = previous + debit - credit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BalanceBreak {
    /// The index of the line in `transactions`.
    pub index: usize,
    /// The balance the rule gives; `None` when previous + debit - credit does not fit in a
    /// decimal (a hostile or corrupt statement), which is a break too.
    pub expected: Option<Amount>,
    /// The balance the line states.
    pub actual: Amount,
    /// The line.
    pub line: Box<StatementLine>,
}

impl std::fmt::Display for BalanceBreak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let l = &self.line;
        write!(
            f,
            "line {} ({} {} on {}): balance {} but previous + debit - credit = ",
            self.index, l.kind, l.id, l.date, self.actual
        )?;
        match self.expected {
            Some(e) => write!(f, "{e}"),
            None => f.write_str("a value too large to hold"),
        }
    }
}

/// The lines of a statement in time order. The spec gives no order for `transactions[]`: a
/// statement listed newest first (its first line dated after its last) is read backwards, then
/// the lines are sorted by date, lines of the same second keeping that order.
pub fn in_time_order(statement: &CurrencyStatement) -> Vec<&StatementLine> {
    let lines = &statement.transactions;
    let mut ordered: Vec<&StatementLine> = lines.iter().collect();
    if let (Some(first), Some(last)) = (lines.first(), lines.last())
        && first.date > last.date
    {
        ordered.reverse();
    }
    ordered.sort_by_key(|l| l.date);
    ordered
}

/// Check the balance rule the spec gives (balance = previous + debit - credit) on every line
/// after the first (whose previous balance is not in the statement), in time order
/// ([`in_time_order`]), and return the first break.
///
/// Each line's balance is compared with the first line's balance plus every debit and minus
/// every credit since, summed exactly, to the currency's smallest unit: a difference under half
/// a cent (or half a pound) is the service's doubles (`9954.800000000001` is 9954.80), but such
/// differences cannot add up unseen, line after line.
///
/// `currentBalance` is the balance **now**, not at the end of the range: a range that ends before
/// now, with later transactions, legitimately ends on another balance, so it is not compared.
///
/// # Errors
///
/// The first line that breaks `balance = previous + debit - credit`, as a `BalanceBreak`.
pub fn check_balance_rule(statement: &CurrencyStatement) -> Result<(), BalanceBreak> {
    let ordered = in_time_order(statement);
    let Some(first) = ordered.first() else {
        return Ok(());
    };
    let mut expected = Some(first.balance.value());
    for line in ordered.iter().skip(1) {
        expected = expected
            .and_then(|v| v.checked_add(line.debit.value()))
            .and_then(|v| v.checked_sub(line.credit.value()));
        if !expected.is_some_and(|e| Amount::new(e).is_same_sum(line.balance, &line.currency)) {
            let index = statement
                .transactions
                .iter()
                .position(|l| std::ptr::eq(l, *line))
                .unwrap_or_default();
            return Err(BalanceBreak {
                index,
                expected: expected.map(Amount::new),
                actual: line.balance,
                line: Box::new((*line).clone()),
            });
        }
    }
    Ok(())
}

/// Activity events and statement lines of one Request-id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Matched {
    /// The activity events.
    pub activity: Vec<ActivityEntry>,
    /// The statement lines.
    pub statement: Vec<StatementLine>,
}

impl Matched {
    /// True when the transfer shows in the activity log but not in the statement, or the other
    /// way round: worth a look.
    pub fn is_one_sided(&self) -> bool {
        self.activity.is_empty() != self.statement.is_empty()
    }
}

/// Pair activity events and statement lines through `requestId`. Lines without one (TOPUP) are
/// left out.
pub fn match_by_request_id(
    activity: &[ActivityEntry],
    statements: &[CurrencyStatement],
) -> BTreeMap<RequestId, Matched> {
    let mut out: BTreeMap<RequestId, Matched> = BTreeMap::new();
    for e in activity {
        if let Some(r) = e.request_id {
            out.entry(r).or_default().activity.push(e.clone());
        }
    }
    for s in statements {
        for l in &s.transactions {
            if let Some(r) = l.request_id {
                out.entry(r).or_default().statement.push(l.clone());
            }
        }
    }
    out
}
