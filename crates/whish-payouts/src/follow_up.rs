//! After a batch: which rows were collected, which still wait, which were cancelled; and the
//! cancel of the rows still uncollected after a date.

use std::sync::Arc;

use serde::Serialize;
use time::OffsetDateTime;
use tokio::task::JoinSet;
use whish_core::RequestId;
use whish_journal::{Journal, Operation, State};
use whish_money_transfer::{PreparedCancel, StatusQuery, TransferClient, TransferStatus};

use crate::row::payout;
use crate::run::resolve;
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
    /// True when this follow-up cancelled it (or an earlier one did, as the journal says).
    pub cancelled_now: bool,
    /// Why, when something needs a word.
    pub message: Option<String>,
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
            message: None,
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

/// Cancel a row's transfer under its own derived Request-id, through the journal.
async fn cancel(
    journal: &Journal,
    client: &TransferClient,
    batch: &str,
    row_key: &str,
    ltn: &str,
    reason: &str,
    row: &mut FollowUpRow,
) {
    let (id, entry) = match resolve(
        journal,
        batch,
        row_key,
        key::cancel_request_id,
        Operation::Cancel,
    )
    .await
    {
        Ok(v) => v,
        Err(e) => {
            row.message = Some(e.to_string());
            return;
        }
    };
    let body = serde_json::json!({ "ltnNumber": ltn, "reason": reason });
    let body = serde_json::to_vec(&body).unwrap_or_default();
    if let Some(e) = &entry
        && e.state == State::Accepted
    {
        row.collection = Collection::Cancelled;
        row.cancelled_now = true;
        row.status = Some("CANCELED_FULL".into());
        return;
    }
    let prepared = match PreparedCancel::from_stored(id, body) {
        Ok(p) => p,
        Err(e) => {
            row.message = Some(e.to_string());
            return;
        }
    };
    match journal.transfer(client.clone()).cancel(&prepared).await {
        Ok(c) => {
            row.collection = collection_of(&c.status);
            row.status = Some(c.status.to_string());
            row.cancelled_now = row.collection == Collection::Cancelled;
        }
        Err(e) => {
            row.message = Some(format!("the cancel was not applied: {e}"));
            // Collected meanwhile, or already cancelled: the status says which.
            if let Ok(s) = client.status(&StatusQuery::LtnNumber(ltn.to_owned())).await {
                row.collection = collection_of(&s.status);
                row.status = Some(s.status.to_string());
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
        row.collection = Collection::NotPaid;
        row.message = Some("never sent: run the batch".into());
        return row;
    };
    row.sent_at = Some(entry.created);
    row.ltn_number = entry.references.ltn_number.clone();
    row.transfer_id = entry.references.transfer_id.clone();
    match entry.state {
        State::Accepted => {}
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
            return row;
        }
        s => {
            row.message = Some(format!(
                "the send is {s} in the journal: run the batch again to settle it"
            ));
            return row;
        }
    }
    if entry.references.transfer_status.as_deref() == Some("CREDITED") {
        row.collection = Collection::Credited;
        row.status = Some("CREDITED".into());
        return row;
    }
    match client.status(&StatusQuery::RequestId(id)).await {
        Ok(s) => {
            row.collection = collection_of(&s.status);
            row.status = Some(s.status.to_string());
            row.ltn_number = s.ltn_number.or(row.ltn_number);
            row.transfer_id = s.transfer_id.or(row.transfer_id);
        }
        Err(e) => {
            row.message = Some(format!("the status could not be read: {e}"));
            return row;
        }
    }
    if let Some((before, reason)) = cancel_before
        && row.collection == Collection::Waiting
        && entry.created < before
    {
        if let Some(ltn) = row.ltn_number.clone() {
            cancel(&journal, &client, &batch, &row_key, &ltn, &reason, &mut row).await;
        } else {
            row.message = Some("no LTN number is known for it: cannot cancel".into());
        }
    }
    row
}

impl Batch {
    /// Where each row's money is now: collected, waiting, cancelled, credited, or not paid, by
    /// the status endpoint (authoritative: a callback proves nothing), `concurrency` reads at a
    /// time. Rows are handed to `sink` as they finish. Nothing is sent.
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
    /// Hands every row's follow-up to `sink`.
    ///
    /// # Errors
    ///
    /// A `BatchError` when the file cannot be read or `sink` fails.
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
        let batch: Arc<str> = Arc::from(self.id.as_str());
        let mut tasks: JoinSet<FollowUpRow> = JoinSet::new();
        let mut rows = self.rows()?;
        let mut give = |r: FollowUpRow| sink(&r).map_err(BatchError::Results);
        while let Some(row) = rows.next_row() {
            let p = match row
                .map_err(|e| e.first().cloned())
                .and_then(|raw| payout(&raw, &self.defaults).map_err(|e| e.first().cloned()))
            {
                Ok(p) => p,
                Err(e) => {
                    let mut r = FollowUpRow::new(
                        e.as_ref().map_or(0, |e| e.line),
                        None,
                        Collection::NotPaid,
                    );
                    r.message = e.map(|e| format!("bad row: {e}"));
                    give(r)?;
                    continue;
                }
            };
            while tasks.len() >= concurrency.max(1) {
                if let Some(done) = tasks.join_next().await {
                    give(done.map_err(|e| BatchError::Input(e.to_string()))?)?;
                }
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
            ));
        }
        while let Some(done) = tasks.join_next().await {
            give(done.map_err(|e| BatchError::Input(e.to_string()))?)?;
        }
        Ok(())
    }
}
