//! After a batch: which rows were collected, which still wait, which were cancelled; and the
//! cancel of the rows still uncollected after a date.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use time::OffsetDateTime;
use tokio::task::JoinSet;
use whish_core::{RequestId, verdict::Verdict};
use whish_journal::{Journal, Operation, State};
use whish_money_transfer::{
    ActivityStatus, PreparedCancel, ReportRange, StatusQuery, TransferClient, TransferCode,
    TransferStatus,
};

use crate::result::RowOutcome;
use crate::row::{Payout, payout};
use crate::run::{resolve, resolve_many};
use crate::send::{ALREADY_HELD, confirms_earlier, refusal_code};
use crate::{Batch, BatchError, key};

/// Where a row's money is, as the service says now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Collection {
    /// Cash collection: the receiver collected it (RECEIVED).
    Collected,
    /// Cash collection: sent and not yet collected (SENT).
    Waiting,
    /// Cancelled (CANCELED_FULL): the money came back to the account.
    Cancelled,
    /// Mobile wallet: credited when it was sent (final).
    Credited,
    /// Not paid: never accepted (refused, not sent, a bad row).
    NotPaid,
    /// Not known now: the row's outcome is still open (run the batch again), the status read
    /// failed, or it answered a status this version does not know.
    Unknown,
}

impl Collection {
    /// The name the follow-up file writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Collection::Collected => "collected",
            Collection::Waiting => "waiting",
            Collection::Cancelled => "cancelled",
            Collection::Credited => "credited",
            Collection::NotPaid => "not-paid",
            Collection::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Collection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a follow-up row's answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Source {
    /// The journal alone: the row was never paid, its send is still open, or it was credited
    /// to a wallet (final when it was sent).
    Journal,
    /// The service's activity log: the row was collected or cancelled (both final), read for
    /// every row of the batch in one call.
    ActivityLog,
    /// The status endpoint, read for this row: what the activity log did not settle (a
    /// transfer still waiting, or one the log did not list).
    Status,
    /// This follow-up's cancel of the row, and its answer.
    Cancel,
}

impl Source {
    /// The name the follow-up file writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Journal => "journal",
            Source::ActivityLog => "activity-log",
            Source::Status => "status",
            Source::Cancel => "cancel",
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of a follow-up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FollowUpRow {
    /// The row's line in the file.
    pub line: u64,
    /// The row's reference.
    pub reference: Option<String>,
    /// The row's Request-id.
    pub request_id: Option<RequestId>,
    /// Where its money is.
    pub collection: Collection,
    /// The status the service answered (SENT, RECEIVED, CANCELED_FULL, ...).
    pub status: Option<String>,
    /// The LTN number.
    pub ltn_number: Option<String>,
    /// The transfer id.
    pub transfer_id: Option<String>,
    /// When the journal recorded the send.
    #[serde(with = "time::serde::rfc3339::option")]
    pub sent_at: Option<OffsetDateTime>,
    /// True when this batch cancelled it: this run's cancel, or an earlier cancel run's, as the
    /// journal holds it (a cancel whose answer was lost and that a later run or the journal's
    /// recovery settled counts too). A transfer cancelled by someone else is `cancelled` with
    /// this false.
    pub cancelled_now: bool,
    /// How this batch's cancel of the row ended: in a cancel run, for a row due for one (still
    /// waiting, sent before the cutoff) or whose earlier cancel is still open, this run's;
    /// otherwise the one the journal holds from an earlier cancel run. `accepted` (cancelled by
    /// the batch); `refused` (final: see `message`); `pending` or `unknown` (the cancel may have
    /// been applied: run the cancel again, which sends the same cancel, never a second one);
    /// `not-sent` (nothing could be sent: see `message`). `None` when the batch never sent a
    /// cancel of the row.
    pub cancel: Option<RowOutcome>,
    /// Why, when something needs a word.
    pub message: Option<String>,
    /// Where the answer came from.
    pub source: Source,
}

impl FollowUpRow {
    fn new(line: u64, reference: Option<String>, collection: Collection) -> FollowUpRow {
        FollowUpRow {
            line,
            reference,
            request_id: None,
            collection,
            status: None,
            ltn_number: None,
            transfer_id: None,
            sent_at: None,
            cancelled_now: false,
            cancel: None,
            message: None,
            source: Source::Journal,
        }
    }
}

fn collection_of(status: &TransferStatus) -> Collection {
    match status {
        TransferStatus::Received => Collection::Collected,
        TransferStatus::Sent => Collection::Waiting,
        TransferStatus::CanceledFull => Collection::Cancelled,
        _ => Collection::Unknown,
    }
}

/// Cancel a row's transfer under its own derived Request-id `id`, through the journal, which
/// holds `entry` under it (read by the row's follow-up).
async fn cancel(
    journal: &Journal,
    client: &TransferClient,
    (id, entry): (RequestId, Option<whish_journal::Entry>),
    ltn: Option<&str>,
    reason: &str,
    row: &mut FollowUpRow,
) {
    // A cancel the journal holds is sent again with its own bytes (an earlier run's reason may
    // differ from this run's, and the journal refuses other bytes under the same key), which
    // name the transfer's LTN even when neither the send's entry nor the row's read knows it.
    let body = match (&entry, ltn) {
        (Some(e), _) => e.request.clone(),
        (None, Some(ltn)) => {
            serde_json::to_vec(&serde_json::json!({ "ltnNumber": ltn, "reason": reason }))
                .unwrap_or_default()
        }
        (None, None) => {
            row.cancel = Some(RowOutcome::NotSent);
            row.message = Some("no LTN number is known for it: cannot cancel".into());
            return;
        }
    };
    if let Some(e) = &entry
        && e.state == State::Accepted
    {
        row.source = Source::Cancel;
        row.collection = Collection::Cancelled;
        row.cancelled_now = true;
        row.cancel = Some(RowOutcome::Accepted);
        row.status = Some("CANCELED_FULL".into());
        return;
    }
    let prepared = match PreparedCancel::from_stored(id, body) {
        Ok(p) => p,
        Err(e) => {
            row.cancel = Some(RowOutcome::NotSent);
            row.message = Some(e.to_string());
            return;
        }
    };
    // Whether this cancel was sent before is the journal's to say: it marks the cancel sent
    // before when it sends an open entry again. Anything else (nothing recorded, or recorded as
    // never sent) is a first cancel, and a `transfer.cannot_be_canceled` answer to it is a
    // refusal (collected, or cancelled by someone else), never this batch's earlier cancel
    // having applied.
    prepared.delivery().clear();
    row.source = Source::Cancel;
    if row.ltn_number.is_none() {
        row.ltn_number = Some(prepared.ltn_number().to_owned());
    }
    match journal.transfer(client.clone()).cancel(&prepared).await {
        Ok(c) => {
            row.collection = collection_of(&c.status);
            row.status = Some(c.status.to_string());
            row.cancelled_now = row.collection == Collection::Cancelled;
            row.cancel = Some(RowOutcome::Accepted);
        }
        Err(e) => {
            // A refusal is final; Pending (`code` 500) and a lost answer are not: the cancel
            // may have been applied, and its journal entry stays open until a run of the
            // cancel sends the same request again.
            let verdict = e.verdict();
            row.cancel = Some(match verdict {
                Verdict::Accepted => RowOutcome::Accepted,
                Verdict::Refused => RowOutcome::Refused,
                Verdict::NothingSent => RowOutcome::NotSent,
                Verdict::Pending => RowOutcome::Pending,
                _ => RowOutcome::Unknown,
            });
            row.message = Some(match verdict {
                Verdict::Refused => format!("the service refused the cancel: {e}"),
                Verdict::NothingSent => format!("the cancel was not sent: {e}"),
                _ => format!(
                    "the cancel's outcome is not known ({e}): run the cancel again, which sends the same cancel, never a second one"
                ),
            });
            // Collected meanwhile, or cancelled (by this cancel, or before): the status says.
            // Until it does, a row read waiting before a cancel that may have applied (or was
            // refused: collected meanwhile?) is not known to wait any more.
            if verdict != Verdict::NothingSent && row.collection == Collection::Waiting {
                row.collection = Collection::Unknown;
                row.status = None;
            }
            if let Ok(s) = client
                .status(&StatusQuery::LtnNumber(prepared.ltn_number().to_owned()))
                .await
            {
                row.collection = collection_of(&s.status);
                row.status = Some(s.status.to_string());
                if matches!(verdict, Verdict::Pending | Verdict::Unknown)
                    && row.collection == Collection::Cancelled
                {
                    row.cancelled_now = true;
                    row.message = Some(format!(
                        "this run's cancel was answered without a final outcome ({e}), and the status read after it says {}: cancelled",
                        s.status
                    ));
                }
            }
        }
    }
}

/// One row's follow-up.
#[allow(clippy::too_many_arguments)]
async fn follow_row(
    journal: Journal,
    client: TransferClient,
    batch: Arc<str>,
    line: u64,
    reference: Option<String>,
    row_key: String,
    cancel_before: Option<(OffsetDateTime, Arc<str>)>,
    log: Arc<Activity>,
) -> FollowUpRow {
    let mut row = FollowUpRow::new(line, reference, Collection::Unknown);
    let (id, entry) =
        match resolve(&journal, &batch, &row_key, key::request_id, Operation::Send).await {
            Ok(v) => v,
            Err(e) => {
                row.message = Some(e.to_string());
                return row;
            }
        };
    row.request_id = Some(id);
    let Some(entry) = entry else {
        // Nothing in the journal: never sent, unless its entry is gone (pruned, or another
        // journal): the service says which.
        not_in_journal(&client, id, &log, &mut row).await;
        return row;
    };
    row.sent_at = Some(entry.created);
    row.ltn_number = entry.references.ltn_number.clone();
    row.transfer_id = entry.references.transfer_id.clone();
    if !send_entry_paid(&client, id, &log, &entry, &mut row).await {
        return row;
    }
    if entry.references.transfer_status.as_deref() == Some("CREDITED") {
        row.collection = Collection::Credited;
        row.status = Some("CREDITED".into());
        return row;
    }
    // The batch's cancel of this row: its Request-id, and what the journal holds under it (an
    // earlier cancel run's). A cancel run sends it under that id.
    let cancel_key = match resolve(
        &journal,
        &batch,
        &row_key,
        key::cancel_request_id,
        Operation::Cancel,
    )
    .await
    {
        Ok(v) => Some(v),
        Err(e) => {
            // Whether the batch ever cancelled the row is not known: `unknown`, and the row is
            // still read from the service; nothing is sent for it.
            row.cancel = Some(RowOutcome::Unknown);
            row.message = Some(format!(
                "the journal's record of a cancel of this row could not be read ({e}): run the same command again"
            ));
            None
        }
    };
    let earlier_cancel = cancel_key.as_ref().and_then(|(_, e)| e.clone());
    let cancel_open = earlier_cancel.as_ref().is_some_and(is_open);
    if let Err(e) = at_service(&client, id, &log, &mut row).await {
        row.message = Some(format!("the status could not be read: {e}"));
        journal_cancel(&mut row, earlier_cancel.as_ref());
        return row;
    }
    // A cancel run cancels a row still waiting that was sent before its cutoff, and sends again
    // any cancel of the batch's the journal holds open (the same cancel, never a second one:
    // its outcome is settled instead of left open behind a row that reads cancelled).
    // A cancel of the batch's that a person abandoned is their decision: not sent again (the
    // journal would refuse it as final), and reported as the journal holds it.
    let cancel_abandoned = earlier_cancel.as_ref().is_some_and(|e| {
        e.state == State::Refused
            && e.outcome
                .as_ref()
                .is_some_and(|o| o.result == whish_journal::ABANDONED)
    });
    if let Some((before, reason)) = cancel_before
        && !cancel_abandoned
        && ((row.collection == Collection::Waiting && entry.created < before) || cancel_open)
    {
        // When the journal could not be read, the row is `unknown`, said above; nothing sent.
        if let Some(key) = cancel_key {
            let ltn = row.ltn_number.clone();
            cancel(&journal, &client, key, ltn.as_deref(), &reason, &mut row).await;
        }
        return row;
    }
    journal_cancel(&mut row, earlier_cancel.as_ref());
    row
}

/// Where the journal's send entry leaves the row: true when the send was paid (accepted, or
/// held by the service from an earlier run or since a person abandoned it) and the row goes on
/// to the service's word; false when the row is settled by the entry alone (not paid, or still
/// open in the journal).
async fn send_entry_paid(
    client: &TransferClient,
    id: RequestId,
    log: &Activity,
    entry: &whish_journal::Entry,
    row: &mut FollowUpRow,
) -> bool {
    let already_held = refusal_code(entry).is_some_and(confirms_earlier);
    match entry.state {
        State::Accepted => {}
        // A first send answered `transfer.already.done`: the service holds this row's
        // transfer from an earlier run whose entry is gone; read where it is.
        State::Refused if already_held => {
            row.message = Some(ALREADY_HELD.into());
        }
        // A person abandoned it after the service showed it never arrived; a request still
        // travelling then may have arrived since: the service says which.
        State::Refused
            if entry
                .outcome
                .as_ref()
                .is_some_and(|o| o.result == whish_journal::ABANDONED) =>
        {
            // The activity log first (as every row), then the status read; a "not found"
            // from the status read alone is confirmed by the log (a second witness, as
            // abandon itself needs) before the row reads not paid.
            match at_service(client, id, log, row).await {
                Ok(_) => row.message = Some(ABANDONED_HELD.into()),
                Err(e) if e.code() == Some(&TransferCode::SendingTransferInvalidInfo) => {
                    row.collection = Collection::Unknown;
                    row.status = None;
                    match client.logged_under(id).await {
                        Ok(false) => {
                            row.collection = Collection::NotPaid;
                            row.message = entry.outcome.as_ref().and_then(|o| o.message.clone());
                        }
                        Ok(true) => {
                            row.message = Some(format!(
                                "a person abandoned this row; the status read finds no transfer under its Request-id, but the activity log lists one: run the same command again ({ABANDONED_HELD})"
                            ));
                        }
                        Err(e) => {
                            row.message = Some(format!(
                                "a person abandoned this row; the status read finds no transfer under its Request-id, and the activity log could not be read to confirm it ({e}): run the same command again"
                            ));
                        }
                    }
                    return false;
                }
                Err(e) => {
                    row.collection = Collection::Unknown;
                    row.message = Some(format!(
                        "a person abandoned this row, and the service could not be read to confirm it holds nothing under its Request-id: {e}"
                    ));
                    return false;
                }
            }
        }
        State::Refused => {
            row.collection = Collection::NotPaid;
            row.message = entry.outcome.as_ref().map(|o| {
                format!(
                    "{}{}",
                    o.result,
                    o.code
                        .as_ref()
                        .map(|c| format!(" ({c})"))
                        .unwrap_or_default()
                )
            });
            return false;
        }
        s => {
            row.message = Some(format!(
                "the send is {s} in the journal: run the batch again to settle it"
            ));
            return false;
        }
    }
    true
}

/// True when a cancel's journal entry is open: it may have been applied, and it is settled by
/// the next cancel run (or the journal's recovery), which sends it again.
fn is_open(e: &whish_journal::Entry) -> bool {
    !matches!(e.state, State::Accepted | State::Refused)
}

/// What the journal holds of the batch's cancel of a row, into the row when this run made
/// none: accepted (the batch cancelled it), refused (final), or open (it may have been applied:
/// a cancel run sends it again). A cancel recorded as never sent is none.
fn journal_cancel(row: &mut FollowUpRow, entry: Option<&whish_journal::Entry>) {
    let Some(e) = entry else { return };
    let outcome = e.outcome.as_ref();
    match e.state {
        State::Accepted => {
            row.cancel = Some(RowOutcome::Accepted);
            row.cancelled_now = true;
        }
        State::Refused if outcome.is_some_and(|o| o.result == "not-sent") => {}
        State::Refused if outcome.is_some_and(|o| o.result == whish_journal::ABANDONED) => {
            row.cancel = Some(RowOutcome::Refused);
            if row.message.is_none() {
                row.message = outcome.and_then(|o| o.message.clone());
            }
        }
        State::Refused => {
            row.cancel = Some(RowOutcome::Refused);
            if row.message.is_none() {
                row.message = Some(format!(
                    "the service refused this batch's cancel of the row{}",
                    outcome
                        .and_then(|o| o.code.as_ref())
                        .map(|c| format!(" ({c})"))
                        .unwrap_or_default()
                ));
            }
        }
        state => {
            row.cancel = Some(if state == State::Pending {
                RowOutcome::Pending
            } else {
                RowOutcome::Unknown
            });
            row.message = Some(format!(
                "this batch's cancel of the row is open in the journal ({state}, Request-id {}): it may have been applied; run `whish payouts cancel` again (it sends the same cancel, never a second one) or `whish journal recover`",
                e.key
            ));
        }
    }
}

/// A row the journal holds nothing for: never sent, unless the service holds a transfer under
/// its Request-id (its journal entry pruned, or sent with another journal).
async fn not_in_journal(
    client: &TransferClient,
    id: RequestId,
    log: &Activity,
    row: &mut FollowUpRow,
) {
    match at_service(client, id, log, row).await {
        Ok(_) => row.message = Some(NOT_IN_JOURNAL.into()),
        Err(e) if e.code() == Some(&TransferCode::SendingTransferInvalidInfo) => {
            row.collection = Collection::NotPaid;
            row.message = Some("never sent: run the batch".into());
        }
        Err(e) => {
            row.message = Some(format!(
                "the journal holds nothing for this row, and its status could not be read: {e}"
            ));
        }
    }
}

/// Where the service says the transfer under `id` is, into `row`: the activity log's final
/// event (RECEIVED or CANCELLED, read once for the batch) when it lists one, `Ok(true)`; else
/// the status read by Request-id, `Ok(false)`, or its error.
async fn at_service(
    client: &TransferClient,
    id: RequestId,
    log: &Activity,
    row: &mut FollowUpRow,
) -> Result<bool, whish_money_transfer::Error> {
    if let Some((collection, status)) = log.settled(id) {
        row.collection = collection;
        row.status = Some(status.to_owned());
        row.source = Source::ActivityLog;
        return Ok(true);
    }
    row.source = Source::Status;
    let s = client.status(&StatusQuery::RequestId(id)).await?;
    row.collection = collection_of(&s.status);
    row.status = Some(s.status.to_string());
    row.ltn_number = s.ltn_number.or(row.ltn_number.take());
    row.transfer_id = s.transfer_id.or(row.transfer_id.take());
    Ok(false)
}

/// Why an abandoned row is read from the service.
const ABANDONED_HELD: &str = "a person abandoned this row after the service showed it had not received it, but the service holds its transfer now (a request that arrived late): where it is below";

/// Why a paid row has no journal entry.
const NOT_IN_JOURNAL: &str = "the journal holds nothing for this row (pruned, or sent with another journal), but the service holds its transfer";

/// What the activity log says of the batch's transfers: the final event of each (RECEIVED or
/// CANCELLED) by Request-id. Empty when it could not be read (every row is read by status).
#[derive(Debug, Default)]
pub(crate) struct Activity {
    settled: HashMap<i64, Collection>,
}

impl Activity {
    fn settled(&self, id: RequestId) -> Option<(Collection, &'static str)> {
        match self.settled.get(&id.get())? {
            Collection::Collected => Some((Collection::Collected, "RECEIVED")),
            Collection::Cancelled => Some((Collection::Cancelled, "CANCELED_FULL")),
            _ => None,
        }
    }

    /// The activity log from a day before `first` (the batch's earliest recorded send) to a
    /// day after now: the service's dates carry no zone, so the window is wide on both sides;
    /// the rows are matched by Request-id, so other transfers in it do no harm.
    async fn read(client: &TransferClient, first: OffsetDateTime) -> Activity {
        let format =
            time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
        let day = time::Duration::days(1);
        let (from, to) = (
            (first - day).format(&format),
            (OffsetDateTime::now_utc() + day).format(&format),
        );
        let range = match (from, to) {
            (Ok(from), Ok(to)) => ReportRange::starting(&from).and_then(|r| r.until(&to)),
            _ => return Activity::default(),
        };
        let entries = match range {
            Ok(range) => client.activity(&range).await,
            Err(_) => return Activity::default(),
        };
        let mut settled = HashMap::new();
        match entries {
            Ok(entries) => {
                for e in entries {
                    let Some(id) = e.request_id else { continue };
                    let c = match e.status {
                        ActivityStatus::Received => Collection::Collected,
                        ActivityStatus::Cancelled => Collection::Cancelled,
                        _ => continue,
                    };
                    settled.insert(id.get(), c);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "the activity log could not be read; every row's status is read instead");
            }
        }
        Activity { settled }
    }
}

impl Batch {
    /// The earliest send the journal recorded for this batch's rows (one pass over the file,
    /// the journal read a chunk at a time), for the activity log's window.
    async fn first_send(&self, journal: &Journal) -> Result<Option<OffsetDateTime>, BatchError> {
        let mut rows = self.rows()?;
        let mut first: Option<OffsetDateTime> = None;
        let mut keys: Vec<String> = Vec::with_capacity(256);
        loop {
            let row = rows.next_row();
            let end = row.is_none();
            if let Some(Ok(raw)) = row
                && let Ok(p) = payout(&raw, &self.defaults, &self.id, false)
            {
                keys.push(Payout::row_key(&p));
            }
            if keys.len() < 256 && !end {
                continue;
            }
            let resolved =
                resolve_many(journal, &self.id, &keys, key::request_id, Operation::Send).await?;
            for (_, entry) in resolved {
                if let Some(e) = entry.filter(|e| e.state == State::Accepted) {
                    first = Some(first.map_or(e.created, |f| f.min(e.created)));
                }
            }
            keys.clear();
            if end {
                return Ok(first);
            }
        }
    }

    /// Where each row's money is now: collected, waiting, cancelled, credited, or not paid.
    /// The service's activity log is read once for the batch's window: a row it shows collected
    /// or cancelled (both final) is settled by it; every other paid row is read with the status
    /// endpoint, `concurrency` reads at a time. Both are the service's word (a callback proves
    /// nothing). Each row says its [`Source`]. Rows are handed to `sink` as they finish.
    /// Nothing is sent.
    ///
    /// # Examples
    ///
    /// The rows whose receivers have not collected yet, a day after the batch:
    ///
    /// ```no_run
    /// # async fn run(
    /// #     journal: whish_journal::Journal,
    /// #     client: whish_money_transfer::TransferClient,
    /// # ) -> Result<(), Box<dyn std::error::Error>> {
    /// use whish_payouts::{Batch, Collection, Defaults};
    /// let batch = Batch::new("aid-2026-11-24", "aid-2026-11-24.csv", Defaults::new())?;
    /// let mut waiting = Vec::new();
    /// batch
    ///     .follow_up(&journal, &client, 8, &mut |row| {
    ///         if row.collection == Collection::Waiting {
    ///             waiting.push((row.line, row.ltn_number.clone()));
    ///         }
    ///         Ok(())
    ///     })
    ///     .await?;
    /// println!("{} rows still to collect", waiting.len());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// A `BatchError` when the file cannot be read or `sink` fails.
    pub async fn follow_up(
        &self,
        journal: &Journal,
        client: &TransferClient,
        concurrency: usize,
        sink: &mut (dyn FnMut(&FollowUpRow) -> std::io::Result<()> + Send),
    ) -> Result<(), BatchError> {
        self.follow(journal, client, concurrency, None, sink).await
    }

    /// Cancel every row still waiting for collection whose send the journal recorded before
    /// `before`, each cancel under its own derived Request-id through the journal (so a cancel
    /// interrupted and run again is the same cancel); `reason` goes to the account's audit log.
    /// Hands every row's follow-up to `sink`; each row due for a cancel says how it ended
    /// ([`FollowUpRow::cancel`]). Starts with the journal's recovery of the transfer service's
    /// open entries (a cancel an earlier run left Pending is settled first), as
    /// [`run`](Self::run) does. When `sink` fails, no further row is started, the rows in
    /// flight finish (their cancels recorded), and the error is returned.
    ///
    /// # Errors
    ///
    /// [`BatchError::Input`] or [`BatchError::Journal`] (nothing sent) when the file or the
    /// journal cannot be read before the start-up recovery; [`BatchError::Recovery`] when that
    /// recovery failed part way (it may have sent open cancels again); [`BatchError::Results`]
    /// when `sink` fails.
    pub async fn cancel_uncollected(
        &self,
        journal: &Journal,
        client: &TransferClient,
        before: OffsetDateTime,
        reason: &str,
        concurrency: usize,
        sink: &mut (dyn FnMut(&FollowUpRow) -> std::io::Result<()> + Send),
    ) -> Result<(), BatchError> {
        self.follow(
            journal,
            client,
            concurrency,
            Some((before, Arc::from(reason))),
            sink,
        )
        .await
    }

    async fn follow(
        &self,
        journal: &Journal,
        client: &TransferClient,
        concurrency: usize,
        cancel_before: Option<(OffsetDateTime, Arc<str>)>,
        sink: &mut (dyn FnMut(&FollowUpRow) -> std::io::Result<()> + Send),
    ) -> Result<(), BatchError> {
        journal.flush().await;
        // Everything that can fail before a row is looked at is done before anything is sent:
        // the file read through and opened again, the journal read for the batch's first send.
        // From the recovery on, an error can no longer say that nothing was sent.
        let first = self.first_send(journal).await?;
        let mut rows = self.rows()?;
        // A cancel run first settles what a run that died left open (as a batch run does): a
        // cancel answered Pending or lost is read by status (CANCELED_FULL: accepted) or sent
        // again, so that its entry is not left open behind a row that now reads cancelled. A
        // follow-up alone sends nothing, so it recovers nothing.
        if cancel_before.is_some() {
            journal
                .recover(
                    &whish_journal::Clients::new().transfer(client.clone()),
                    &whish_journal::Recovery::new(),
                )
                .await
                .map_err(BatchError::Recovery)?;
        }
        let log = Arc::new(match first {
            Some(first) => Activity::read(client, first).await,
            None => Activity::default(),
        });
        let batch: Arc<str> = Arc::from(self.id.as_str());
        let mut tasks: JoinSet<FollowUpRow> = JoinSet::new();
        // The first failure of `sink` (or of a row's task) ends the reading of rows; the rows in
        // flight still finish (a cancel is never dropped half way: its journal entry would stay
        // open, leased to this process) and are handed on no further.
        let mut failed: Option<BatchError> = None;
        while let Some(row) = rows.next_row() {
            if failed.is_some() {
                break;
            }
            let p = match row.map_err(|e| e.first().cloned()).and_then(|raw| {
                payout(&raw, &self.defaults, &self.id, false).map_err(|e| e.first().cloned())
            }) {
                Ok(p) => p,
                Err(e) => {
                    let mut r = FollowUpRow::new(
                        e.as_ref().map_or(0, |e| e.line),
                        None,
                        Collection::NotPaid,
                    );
                    r.message = e.map(|e| format!("bad row: {e}"));
                    hand_on(sink, &mut failed, Ok(r));
                    continue;
                }
            };
            while tasks.len() >= concurrency.max(1) {
                if let Some(done) = tasks.join_next().await {
                    hand_on(sink, &mut failed, done);
                }
            }
            if failed.is_some() {
                break;
            }
            let row_key = p.row_key();
            tasks.spawn(follow_row(
                journal.clone(),
                client.clone(),
                batch.clone(),
                p.line,
                p.reference,
                row_key,
                cancel_before.clone(),
                log.clone(),
            ));
        }
        while let Some(done) = tasks.join_next().await {
            hand_on(sink, &mut failed, done);
        }
        failed.map_or(Ok(()), Err)
    }
}

/// Hand a finished row to `sink`, unless an earlier row's hand-over failed: the first failure
/// is kept, and ends the reading of rows (the rows in flight still finish). A row whose task
/// failed (a bug) is handed on as unknown (its line is not known; in a cancel run it may have
/// sent its cancel, which the next run reads from the journal).
fn hand_on(
    sink: &mut (dyn FnMut(&FollowUpRow) -> std::io::Result<()> + Send),
    failed: &mut Option<BatchError>,
    row: Result<FollowUpRow, tokio::task::JoinError>,
) {
    if failed.is_some() {
        return;
    }
    let row = row.unwrap_or_else(|e| {
        let mut r = FollowUpRow::new(0, None, Collection::Unknown);
        r.message = Some(format!(
            "a row's follow-up failed: {e}; it may have sent the row's cancel: run the same command again"
        ));
        r
    });
    *failed = sink(&row).err().map(BatchError::Results);
}
