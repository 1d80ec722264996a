//! One row's send: what the journal already says of it, the reservation of the rows about to be
//! sent (one durable journal write for a wave of rows, before any of them is sent), and the send
//! itself, or the giving back of a reserved row the batch will not send.

use whish_core::{RequestId, verdict::Verdict};
use whish_journal::{Entry, JournaledTransfer, ReservedSend, State, Unreserved};
use whish_money_transfer::{PreparedTransfer, SendOutcome, TransferClient};

use crate::result::{RowOutcome, RowResult};
use crate::row::Payout;

/// A row's result as the journal holds it, when the journal already settles it (accepted,
/// refused for good, waiting for an operator); `None` when the row is to be sent.
fn from_journal(p: &Payout, id: RequestId, entry: &Entry) -> Option<RowResult> {
    let mut r = row_result(p);
    r.outcome = RowOutcome::Accepted;
    r.request_id = Some(id);
    r.earlier_run = true;
    let outcome = entry.outcome.as_ref();
    match entry.state {
        State::Accepted => {
            let refs = &entry.references;
            r.result = Some(
                match (
                    outcome.map(|o| o.result.as_str()),
                    refs.transfer_status.as_deref(),
                ) {
                    (Some("confirmed"), _) => "confirmed".to_owned(),
                    (_, Some("CREDITED")) => "credited".to_owned(),
                    _ => "sent".to_owned(),
                },
            );
            r.ltn_number = refs.ltn_number.clone();
            r.transfer_id = refs.transfer_id.clone();
            r.fee = refs.charges;
            Some(r)
        }
        State::Refused if outcome.is_some_and(|o| o.result == "not-sent") => None,
        State::Refused if refusal_code(entry).is_some_and(confirms_earlier) => {
            r.outcome = RowOutcome::Unknown;
            r.code = refusal_code(entry).map(str::to_owned);
            r.message = Some(ALREADY_HELD.into());
            Some(r)
        }
        State::Refused => {
            r.outcome = RowOutcome::Refused;
            // A row a person abandoned (`whish journal abandon`) reads as refused, code
            // `abandoned`: never sent again.
            r.code = outcome.and_then(|o| {
                o.code
                    .clone()
                    .or_else(|| (o.result == whish_journal::ABANDONED).then(|| o.result.clone()))
            });
            r.message = outcome.and_then(|o| o.message.clone());
            Some(r)
        }
        State::NeedsOperator => {
            r.outcome = RowOutcome::NeedsOperator;
            r.message = Some(format!(
                "{}: nothing sends it by itself; to settle it, `whish journal recover --retry-needs-operator --deadline-hours H` (H covering when it was recorded: it is read by status first, and sent again only if the service never received it), then run the batch again; to close it unpaid, `whish journal abandon KEY --reason TEXT`",
                outcome
                    .and_then(|o| o.message.clone())
                    .unwrap_or_else(|| "the journal holds this row for an operator".into())
            ));
            Some(r)
        }
        // Open: sent again with the same Request-id and bytes (a resend: the service answers
        // `transfer.already.done` if the first one arrived, and the status read confirms it).
        _ => None,
    }
}

/// A row after the journal's word on it, before any send.
pub(crate) enum Planned {
    /// Settled without a send: the journal settles it already, the row changed since it was
    /// recorded, or it could not be prepared.
    Done(RowResult),
    /// To send. `fresh` when the journal holds nothing under its Request-id (as looked up, or
    /// as the check found it while nothing else was recorded since): it is reserved with the
    /// rows about to be sent; otherwise its entry is resent the journal's way.
    Send {
        result: RowResult,
        prepared: PreparedTransfer,
        fresh: bool,
    },
}

/// A row's report before the journal's word on it: not sent, with its amount.
pub(crate) fn row_result(p: &Payout) -> RowResult {
    let mut r = RowResult::new(p.line, p.reference.clone(), RowOutcome::NotSent);
    r.amount = Some(p.amount);
    r.currency = Some(p.currency.clone());
    r
}

/// A row the journal could not be looked up for. This run did not send it, but an earlier run
/// (or another process running this batch) may have: never "not sent". Reached while the
/// batch still runs, the failure is the journal's and stops the batch (`JOURNAL_FAILED`);
/// reached once the batch has stopped, the row is one the stop left unsent.
pub(crate) fn unread_row(mut r: RowResult, error: &str, stopped: bool) -> RowResult {
    r.outcome = RowOutcome::Unknown;
    let what = if stopped {
        "the batch stopped before this row was sent, and the journal could not be read for it"
    } else {
        r.code = Some(JOURNAL_FAILED.into());
        "the journal could not be read for this row"
    };
    r.message = Some(format!(
        "{what} ({error}): this run did not send it, but an earlier run, or another process running this batch, may have; run the batch again once the journal is back"
    ));
    r
}

/// What the journal says of a row, and what is left to do with it. The row's transfer is the
/// one its check prepared when that was under the same Request-id, else prepared here.
pub(crate) fn plan_row(
    client: &TransferClient,
    p: &mut Payout,
    (id, entry, earlier): crate::run::Resolved,
) -> Planned {
    let mut r = row_result(p);
    r.request_id = Some(id);
    let checked = p.prepared.take().filter(|c| c.request_id() == id);
    let prepared =
        match checked.map_or_else(|| client.prepare_send(p.request.clone().request_id(id)), Ok) {
            Ok(prepared) => prepared,
            Err(e) => {
                r.message = Some(e.to_string());
                return Planned::Done(r);
            }
        };
    // A row sent under a later attempt after an account limit must still be the row recorded.
    if entry.is_none()
        && let Some(e) = &earlier
        && e.request != prepared.body()
    {
        r.message = Some(format!(
            "the row changed since Request-id {} recorded it: not sent (a changed row is a new payment: give it a new reference)",
            e.key
        ));
        return Planned::Done(r);
    }
    if let Some(entry) = &entry {
        if entry.request != prepared.body() {
            r.message = Some(format!(
                "the row changed since Request-id {id} recorded it: not sent (a changed row is a new payment: give it a new reference)"
            ));
            return Planned::Done(r);
        }
        // Recorded for another service or account (the same file run against staging, then
        // production): what that entry says is not this service's, paid or not. Nothing is
        // sent, and nothing is known here of the row.
        if let Some(recorded) = entry.target.as_deref() {
            let here = client.target();
            if recorded != here {
                r.outcome = RowOutcome::Unknown;
                r.earlier_run = true;
                r.message = Some(format!(
                    "Request-id {id} is recorded for another service ({recorded}); this run sends to {here}: nothing was sent for this row, and nothing is known of it here; run the batch with that service's settings, or give the row a new reference"
                ));
                return Planned::Done(r);
            }
        }
        if let Some(done) = from_journal(p, id, entry) {
            return Planned::Done(done);
        }
    }
    Planned::Send {
        result: r,
        prepared,
        fresh: entry.is_none(),
    }
}

/// How a row goes out.
pub(crate) enum Sending {
    /// Recorded with its wave (or, when the reservation could not be written, on its own).
    Reserved(ReservedSend),
    /// Its Request-id is in the journal from an earlier run: sent the journal's way.
    Recorded(PreparedTransfer),
    /// Reserved under the repeat check but not held (the write failed, a PostgreSQL lock's
    /// session ended, or another process of this batch recorded its Request-id first): never
    /// sent on the strength of that check. Given back; sent the journal's way only when its
    /// Request-id was recorded before (the same transfer).
    NotHeld(ReservedSend),
}

/// The service's code of a refusal the journal holds: `None` for an entry not refused, or
/// refused without a code.
pub(crate) fn refusal_code(entry: &Entry) -> Option<&str> {
    if entry.state != State::Refused {
        return None;
    }
    entry.outcome.as_ref().and_then(|o| o.code.as_deref())
}

/// The code of a row the journal failed on: it could not read what it holds for the row, or
/// record the row before its send (or its answer after). The journal's own failure (a full
/// disk, a database that is down), not one of its rules: it stops the batch.
pub const JOURNAL_FAILED: &str = "journal-failed";

/// True for the service's answer to a Request-id it already holds a transfer under
/// (`transfer.already.done`: the column `confirms_earlier` of the codes table).
pub(crate) fn confirms_earlier(code: &str) -> bool {
    <whish_money_transfer::TransferCode as whish_core::ErrorCode>::parse(code)
        .confirms_earlier_delivery()
}

/// Why a row whose first send met `transfer.already.done` is unknown, never refused: the Request-id is
/// derived from the batch and the row, so the transfer the service holds under it is this row's,
/// sent by an earlier run whose journal entry is gone (pruned, or another journal).
pub(crate) const ALREADY_HELD: &str = "the service already holds a transfer under this row's Request-id, and the journal held nothing for it (pruned, or sent with another journal): it was not paid again; `whish payouts follow-up` reads where it is";

/// Why a row this run held back is unknown: the journal held it before.
pub(crate) const RECORDED_BEFORE: &str = "this run did not send the row, but the journal already held it (an earlier run, or another process running this batch, may have sent it): run the batch again to settle it";

/// Send one row (or, when `held_back` says why it must not go, give its reservation back), and
/// its result.
pub(crate) async fn send_row(
    t: JournaledTransfer,
    mut r: RowResult,
    sending: Sending,
    held_back: Option<String>,
) -> RowResult {
    if let Some(why) = held_back {
        r.outcome = RowOutcome::NotSent;
        r.message = Some(why);
        // The journal held the row before this run reached it (an earlier run, or another
        // process running the same batch now): it may have been sent, or be sent now. Never
        // "nothing was sent" then.
        let reserved = match sending {
            Sending::Reserved(reserved) | Sending::NotHeld(reserved) => reserved,
            Sending::Recorded(_) => {
                r.outcome = RowOutcome::Unknown;
                r.message = Some(RECORDED_BEFORE.into());
                return r;
            }
        };
        match t.unreserve(reserved).await {
            Ok(Unreserved::NeverSent) => {}
            Ok(Unreserved::AsBefore) => {
                r.outcome = RowOutcome::Unknown;
                r.message = Some(RECORDED_BEFORE.into());
            }
            Ok(_) => {
                r.outcome = RowOutcome::Unknown;
                r.message = Some(
                    "the batch stopped before this row was sent, but another process took its journal entry over and may send it: look at it with `whish journal show`, or run recovery".into(),
                );
            }
            Err(e) => {
                r.outcome = RowOutcome::Unknown;
                r.message = Some(format!(
                    "the batch stopped before this row was sent, and its journal entry could not be recorded as unsent ({e}): a recovery may send it; run the batch again to settle it"
                ));
            }
        }
        return r;
    }
    let answer = match sending {
        Sending::Reserved(reserved) => t.send_reserved(reserved).await,
        // Found open when its chunk was read: resent as it was recorded, never reopened if
        // another run gave it back meanwhile (no check of any run would count it then).
        Sending::Recorded(prepared) => t.send_recorded(&prepared).await,
        Sending::NotHeld(reserved) => {
            let prepared = reserved.prepared().clone();
            let why = match t.unreserve(reserved).await {
                Ok(Unreserved::AsBefore) => None,
                Ok(Unreserved::NeverSent) => {
                    r.outcome = RowOutcome::NotSent;
                    Some("this row could not be recorded before its send (the journal's write failed); nothing was sent".to_owned())
                }
                Ok(_) => {
                    r.outcome = RowOutcome::Unknown;
                    Some("this row could not be recorded before its send, and another process took its journal entry over and may send it: look at it with `whish journal show`, or run recovery".to_owned())
                }
                Err(e) => {
                    r.outcome = RowOutcome::Unknown;
                    Some(format!(
                        "this row could not be recorded before its send, nor recorded as never sent ({e}): this run did not send it, but a recovery may; run the batch again to settle it"
                    ))
                }
            };
            if let Some(why) = why {
                // The journal failed: every row after this one would meet it too.
                r.code = Some(JOURNAL_FAILED.into());
                r.message = Some(why);
                return r;
            }
            t.send_recorded(&prepared).await
        }
    };
    match answer {
        Ok(o) => {
            r.outcome = RowOutcome::Accepted;
            r.ltn_number = o.ltn_number().map(str::to_owned);
            r.transfer_id = o.transfer_id().map(str::to_owned);
            let (result, fee) = match &o {
                SendOutcome::Sent(s) => ("sent", s.charges),
                SendOutcome::Credited(c) => ("credited", c.charges),
                _ => ("confirmed", None),
            };
            r.result = Some(result.to_owned());
            r.fee = fee;
        }
        Err(e) => {
            r.outcome = match e.verdict() {
                Verdict::Accepted => RowOutcome::Accepted,
                Verdict::Refused => RowOutcome::Refused,
                Verdict::Pending => RowOutcome::Pending,
                Verdict::NothingSent => RowOutcome::NotSent,
                _ => RowOutcome::Unknown,
            };
            if let whish_core::Error::Failed(f) = &e {
                r.code = Some(f.raw.clone());
            }
            // The journal itself failed (a full disk, a database that went away, a replaced
            // file), not its rules: every row after this one would meet it too.
            if let whish_core::Error::Record(record) = &e
                && std::error::Error::source(record).is_some()
            {
                r.code = Some(JOURNAL_FAILED.into());
            }
            r.message = Some(e.to_string());
            if r.outcome == RowOutcome::Refused && r.code.as_deref().is_some_and(confirms_earlier) {
                r.outcome = RowOutcome::Unknown;
                r.message = Some(ALREADY_HELD.into());
            }
        }
    }
    r
}
