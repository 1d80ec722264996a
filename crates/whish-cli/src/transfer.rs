//! `whish transfer ...`.

use std::path::Path;

use crate::printed;
use serde::Deserialize;
use whish::transfer::{
    CashCollectionSend, CashReceiver, CountryId, Customer, DateOfBirth, FeeRequest, FirstName,
    Identity, LastName, MobileWalletSend, PaymentMode, PreparedTransfer, Reason, ReportRange,
    SendOutcome, SendRequest, Sender, SourceOfFunds, StatusQuery, TransferClient, WalletReceiver,
    reconcile,
};
use whish::{Amount, Currency, RequestId};

use crate::cli::{Mode, Report, TransferCmd};
use crate::output::{self, Done, REFUSED, usage};
use crate::settings::Ctx;

pub fn currency(c: crate::cli::Cur) -> Currency {
    match c {
        crate::cli::Cur::Usd => Currency::Usd,
        crate::cli::Cur::Lbp => Currency::Lbp,
    }
}

pub fn amount(text: &str) -> Result<Amount, u8> {
    text.trim()
        .parse::<Amount>()
        .map_err(|e| usage(format!("--amount: {e}")))
}

pub async fn run(ctx: &Ctx, cmd: TransferCmd) -> Done {
    let out = ctx.out;
    if let TransferCmd::CheckCallback {
        body,
        timestamp,
        signature,
        window,
        sandbox_key,
    } = &cmd
    {
        return crate::check_callback::run(
            out,
            &crate::check_callback::Check {
                body,
                timestamp,
                signature,
                window: std::time::Duration::from_secs(*window),
                sandbox_key: sandbox_key.as_deref(),
            },
        );
    }
    let client = ctx.transfer()?;
    let report = |e: &whish::transfer::Error| output::error(&out, e);
    let read_failed = |e: &whish::transfer::Error| output::read_failed(&out, e);
    match cmd {
        TransferCmd::Fees {
            from_country,
            currency: c,
            amount: a,
            payment_mode,
            deduct_fees,
            phone_number,
        } => {
            let mut q = FeeRequest::new(
                whish::transfer::CountryId::new(from_country).map_err(usage)?,
                currency(c),
                amount(&a)?,
            )
            .deduct_fees(deduct_fees);
            if let Some(m) = payment_mode {
                q = q.payment_mode(match m {
                    Mode::CashCollection => PaymentMode::CashCollection,
                    Mode::MobileWallet => PaymentMode::MobileWallet,
                });
            }
            if let Some(p) = phone_number {
                q = q.phone_number(p);
            }
            let quote = client.fees(&q).await.map_err(|e| read_failed(&e))?;
            Ok(out.success(&quote))
        }
        TransferCmd::Send {
            body,
            request_id,
            quoted_total,
            wait,
            allow_repeat,
        } => {
            send(
                ctx,
                client,
                &body,
                request_id,
                quoted_total,
                wait,
                allow_repeat,
            )
            .await
        }
        TransferCmd::Resend {
            body,
            request_id,
            wait,
        } => resend(ctx, client, &body, request_id, wait).await,
        TransferCmd::Status {
            transfer_id,
            ltn,
            request_id,
        } => {
            let request_id = request_id.map(RequestId::new).transpose().map_err(usage)?;
            let q = match (transfer_id, ltn, request_id) {
                (Some(t), None, None) => StatusQuery::TransferId(t),
                (None, Some(l), None) => StatusQuery::LtnNumber(l),
                (None, None, Some(r)) => StatusQuery::RequestId(r),
                (transfer_id, ltn_number, request_id) => StatusQuery::Several {
                    transfer_id,
                    ltn_number,
                    request_id,
                },
            };
            let s = client
                .status(&q)
                .await
                .map_err(|e| status_failed(out, &q, &e))?;
            Ok(out.success(&s))
        }
        TransferCmd::Cancel { ltn, reason } => {
            let prepared = client
                .prepare_cancel(&ltn, reason.as_deref())
                .map_err(|e| report(&e))?;
            let journal = ctx.journal().await?;
            let c = journal
                .transfer(client)
                .cancel(&prepared)
                .await
                .map_err(|e| report(&e))?;
            Ok(out.success(&c))
        }
        TransferCmd::CheckCallback { .. } => unreachable!("checked above, with no settings"),
        TransferCmd::Countries => {
            let c = client
                .sending_countries()
                .await
                .map_err(|e| read_failed(&e))?;
            Ok(out.success(&c))
        }
        TransferCmd::Modes => {
            let m = client.payment_modes().await.map_err(|e| read_failed(&e))?;
            Ok(out.success(&m))
        }
        TransferCmd::Activity(r) => {
            let a = client
                .activity(&range(&r)?)
                .await
                .map_err(|e| read_failed(&e))?;
            Ok(out.success(&a))
        }
        TransferCmd::Statement { report: r, verify } => {
            let statements = client
                .statement(&range(&r)?)
                .await
                .map_err(|e| read_failed(&e))?;
            if verify {
                for s in &statements {
                    if let Err(b) = reconcile::check_balance_rule(s) {
                        return Err(out.failure(
                            &printed::StatementBroken {
                                statement: &statements,
                                balance_rule: format!("{b:?}"),
                            },
                            &format!(
                                "the statement breaks balance = previous + debit - credit: {b}"
                            ),
                            REFUSED,
                        ));
                    }
                }
                eprintln!("whish: every line keeps balance = previous + debit - credit");
            }
            Ok(out.success(&statements))
        }
    }
}

/// `transfer send`: check the body (and the quote, when given), journal it, then send it once.
/// `allow_repeat`: send it even when the journal holds the same body as a send under another
/// Request-id whose outcome is still open.
async fn send(
    ctx: &Ctx,
    client: TransferClient,
    body: &Path,
    request_id: Option<i64>,
    quoted_total: Option<String>,
    wait: Option<u64>,
    allow_repeat: bool,
) -> Done {
    let out = ctx.out;
    let report = |e: &whish::transfer::Error| output::error(&out, e);
    let mut request = parse_send(&read_body(body)?)?;
    if let Some(n) = request_id {
        request = request.request_id(RequestId::new(n).map_err(usage)?);
    }
    if let Some(total) = quoted_total {
        still_quoted(&client, &request, amount(&total)?).await?;
    }
    let prepared = client.prepare_send(request).map_err(|e| report(&e))?;
    // The journal first: a journal that cannot be opened sends nothing, and a line
    // telling to store the key of a request that never left would mislead.
    let journal = ctx.journal().await?;
    // A body the journal holds as a send under another Request-id whose outcome is still
    // open (unknown, Pending, waiting for an operator) is most often that transfer sent again
    // by hand, and a new Request-id would pay it twice. A Request-id the journal holds itself
    // is that transfer's resend.
    let counted = (!allow_repeat).then_some(Counted::Open);
    let journaled = journal.transfer(client);
    let answer = checked(&out, &journal, &journaled, &prepared, counted, false).await?;
    answered(out, &journal, &journaled, &prepared, answer, wait).await
}

/// `transfer resend`: send a known request again under its own Request-id, never a body the
/// journal holds under another one.
async fn resend(
    ctx: &Ctx,
    client: TransferClient,
    body: &Path,
    request_id: i64,
    wait: Option<u64>,
) -> Done {
    let out = ctx.out;
    let report = |e: &whish::transfer::Error| output::error(&out, e);
    let id = RequestId::new(request_id).map_err(usage)?;
    let request = parse_send(&read_body(body)?)?.request_id(id);
    let prepared = client.prepare_send(request).map_err(|e| report(&e))?;
    // A known resend: transfer.already.done confirms the earlier send (spec rule 5) and
    // the outcome is read with status by requestId.
    let journal = ctx.journal().await?;
    let journaled = journal.transfer(client);
    let counted = Some(Counted::OpenOrAccepted);
    let answer = checked(&out, &journal, &journaled, &prepared, counted, true).await?;
    answered(out, &journal, &journaled, &prepared, answer, wait).await
}

/// Send `prepared` (`resend`: as a request sent before, whose `transfer.already.done` confirms
/// it) unless the journal holds its body under another Request-id in a state `counted` names
/// (not checked when `None`): refused then, nothing sent.
///
/// The check and the intent's write are one step, under the journal's repeat check
/// ([`Journal::lock_repeat_check`]): a send of the same body started at the same moment in
/// another process waits for it, then finds this one. The lock is let go once the intent is
/// recorded, before the send, and never held across a call to the service: an intent the
/// journal could not record under the lock (a failed write; on PostgreSQL, also a lock whose
/// session ended) is given back and not sent. A Request-id the journal holds already is that
/// transfer's own resend (unless it is recorded as never sent: then it is checked as a new
/// one), and an unchecked send (`--allow-repeat`) checks nothing: neither takes it.
///
/// [`Journal::lock_repeat_check`]: whish::journal::Journal::lock_repeat_check
async fn checked(
    out: &output::Out,
    journal: &whish::journal::Journal,
    journaled: &whish::journal::JournaledTransfer,
    prepared: &PreparedTransfer,
    counted: Option<Counted>,
    resend: bool,
) -> Result<Result<SendOutcome, whish::transfer::Error>, u8> {
    use whish::journal::{Operation, Service};
    let id = prepared.request_id();
    let announce = || {
        if !resend {
            eprintln!(
                "whish: Request-id {id}: store it; if the outcome is unknown, `whish transfer resend --body FILE --request-id {id}`"
            );
        }
    };
    let target = journaled.client().target();
    // A Request-id recorded as never sent, with these bytes for this service, goes as a first
    // send: checked, and recorded afresh under the check (its reservation replaces the entry),
    // so that whoever checks next finds it. Any other recorded Request-id is its own transfer's.
    let recorded = journal
        .entry(Service::MoneyTransfer, Operation::Send, &id.to_string())
        .await
        .map_err(|e| usage(format!("journal: {e}")))?
        .is_some_and(|e| {
            !(e.never_left()
                && e.request == prepared.body()
                && e.target.as_deref().is_none_or(|t| t == target))
        });
    let Some(counted) = counted.filter(|_| !recorded) else {
        announce();
        return Ok(if resend {
            journaled.resend(prepared).await
        } else {
            journaled.send(prepared).await
        });
    };
    let mut check = repeat_check(journal).await?;
    let found = same_body_elsewhere(journal, &target, id, prepared.body(), counted).await;
    if let Some((other, state)) = match found {
        Ok(found) => found,
        Err(code) => {
            check.release().await;
            return Err(code);
        }
    } {
        check.release().await;
        return Err(a_repeat(out, id, &other, state, counted));
    }
    announce();
    let reserved = journaled
        .reserve_under(&mut check, vec![prepared.clone()])
        .await
        .pop()
        .expect("one reservation for one transfer");
    if !reserved.is_held() {
        // Not recorded under the check: the journal's write failed (or its PostgreSQL session,
        // and the lock with it, ended; or another process recorded this Request-id in the
        // same instant). Sending it now would need a second check; nothing is sent.
        let code = usage(format!(
            "journal: Request-id {id} could not be recorded before its send (the journal's write failed)"
        ));
        let code = give_back(journaled, reserved, code).await;
        check.release().await;
        return Err(code);
    }
    // Recorded: whoever checks next finds it.
    check.release().await;
    Ok(if resend {
        journaled.resend_reserved(reserved).await
    } else {
        journaled.send_reserved(reserved).await
    })
}

/// Give back a transfer reserved and not to be sent (recorded as never sent), and fail with
/// `code`. Unless the journal records it never sent, say what may still send it: an entry this
/// command cannot tell never sent (its write failed in a way that proves nothing, its lease
/// was taken over, or the settlement's write failed) is sent by a recovery, and one recorded
/// by another process before this command's is that process's.
async fn give_back(
    journaled: &whish::journal::JournaledTransfer,
    reserved: whish::journal::ReservedSend,
    code: u8,
) -> u8 {
    use whish::journal::Unreserved;
    let id = reserved.prepared().request_id();
    let may_send = |why: String| {
        eprintln!(
            "whish: journal: Request-id {id} was not sent by this command, but {why}: a `whish journal recover` may send it; look at it with `whish journal show {id}`, and if no process is sending it and it must not go, `whish journal abandon {id} --reason TEXT`"
        );
    };
    match journaled.unreserve(reserved).await {
        Ok(Unreserved::NeverSent) => {}
        Ok(Unreserved::AsBefore) => eprintln!(
            "whish: journal: Request-id {id} was not sent by this command: the journal held it before (another process's send, left as it was; `whish journal show {id}`)"
        ),
        // Taken over, or any answer this command does not know: not known never sent.
        Ok(_) => {
            may_send("the journal may hold it open (its entry could not be told never sent)".into())
        }
        Err(e) => may_send(format!("it could not be recorded as never sent ({e})")),
    }
    code
}

/// Take the journal's repeat check ([`Journal::lock_repeat_check`]), saying on stderr why this
/// waits when it is not free within a second.
///
/// [`Journal::lock_repeat_check`]: whish::journal::Journal::lock_repeat_check
async fn repeat_check(
    journal: &whish::journal::Journal,
) -> Result<whish::journal::RepeatCheckLock, u8> {
    let failed = |e: whish::journal::JournalError| usage(format!("journal: {e}"));
    let take = journal.lock_repeat_check();
    tokio::pin!(take);
    tokio::select! {
        held = &mut take => return held.map_err(failed),
        () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
    }
    eprintln!(
        "whish: waiting for the journal's repeat check: another process is checking for a payment made before, or recording its send"
    );
    // A check and a write take milliseconds: a lock held for minutes is a holder that is
    // stuck (or a PostgreSQL pooler in transaction mode, which never lets it go).
    match tokio::time::timeout(REPEAT_CHECK_WAIT, take).await {
        Ok(held) => held.map_err(failed),
        Err(_) => Err(usage(format!(
            "journal: the repeat check was not free within {} s: another process holds it (a stuck one, or a PostgreSQL pooler in transaction mode, with which the journal does not work)",
            REPEAT_CHECK_WAIT.as_secs()
        ))),
    }
}

/// The longest a send waits for the journal's repeat check.
const REPEAT_CHECK_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Quote `request` on its own terms and go on only when the total is still `shown`, the total
/// the customer agreed to (the service's rule: send what was quoted).
async fn still_quoted(
    client: &whish::transfer::TransferClient,
    request: &SendRequest,
    shown: Amount,
) -> Result<(), u8> {
    let terms = request.fee_request();
    // A quote is a read: whatever it answered, the send was not sent, and the quote's own key
    // is nothing to follow up.
    let quote = client.fees(&terms).await.map_err(|e| {
        usage(format!(
            "the send could not be quoted again ({}): the total the customer was shown is not confirmed",
            e.verdict().as_str()
        ))
    })?;
    // The service's amounts are doubles: the same money at the currency's precision.
    if !quote.total_amount.is_same_sum(shown, terms.currency()) {
        return Err(usage(format!(
            "this send is quoted now at {} in all ({} fees), not the {shown} the customer was shown: quote again and show the new total",
            quote.total_amount, quote.fees
        )));
    }
    eprintln!(
        "whish: quoted again: {} in all ({} fees), as the customer was shown",
        quote.total_amount, quote.fees
    );
    Ok(())
}

/// Report the answer of a journaled send or resend: followed up for `wait` seconds first when
/// it is Pending or unknown and a wait was asked for.
async fn answered(
    out: output::Out,
    journal: &whish::journal::Journal,
    journaled: &whish::journal::JournaledTransfer,
    prepared: &whish::transfer::PreparedTransfer,
    answer: Result<SendOutcome, whish::transfer::Error>,
    wait: Option<u64>,
) -> Done {
    match (answer, wait) {
        (Ok(outcome), _) => Ok(send_outcome(&out, outcome, prepared.request_id())),
        (Err(e), Some(secs)) if e.is_pending() || e.outcome_unknown() => {
            follow_up(out, journal, journaled, prepared, &e, secs).await
        }
        (Err(e), _) => Err(output::error(&out, &e)),
    }
}

/// Follow a send that answered Pending (or whose outcome is unknown) up for at most `secs`,
/// recorded in the journal, and report what its entry became, in the shape of a send: exit 0
/// accepted, 1 refused, 3 still Pending, 4 still unknown or waiting for a person.
async fn follow_up(
    out: output::Out,
    journal: &whish::journal::Journal,
    journaled: &whish::journal::JournaledTransfer,
    prepared: &whish::transfer::PreparedTransfer,
    first: &whish::transfer::Error,
    secs: u64,
) -> Done {
    use whish::journal::{Operation, Service, State};
    let id = prepared.request_id();
    let key = id.to_string();
    eprintln!(
        "whish: Request-id {id}: {}; following it up for up to {secs} s (status by Request-id), recorded in the journal",
        output::printable(&first.to_string())
    );
    let bound = std::time::Duration::from_secs(secs);
    let follow = whish::core::FollowUp::within(bound);
    // The wait is a bound on the whole follow-up, a status read that hangs included: at the
    // bound the entry is read as it stands.
    let journal_failed = |e: &dyn std::fmt::Display| {
        eprintln!(
            "whish: the follow-up could not use the journal ({}); the outcome of Request-id {id} is unknown: `whish transfer status --request-id {id}`",
            output::printable(&e.to_string())
        );
        output::UNKNOWN
    };
    let entry = match tokio::time::timeout(bound, journaled.await_final(prepared, follow)).await {
        Ok(entry) => entry.map_err(|e| journal_failed(&e))?,
        Err(_) => journal
            .entry(Service::MoneyTransfer, Operation::Send, &key)
            .await
            .map_err(|e| journal_failed(&e))?
            .ok_or_else(|| journal_failed(&"no entry under this Request-id"))?,
    };
    // A Pending answer stays Pending until a final one: a status read that failed since says
    // nothing more of it.
    let state = match entry.state {
        State::MayHaveArrived if first.is_pending() => State::Pending,
        s => s,
    };
    let r = &entry.references;
    let outcome = match state {
        State::Accepted => "accepted",
        State::Refused => "refused",
        State::Pending => "pending",
        _ => "unknown",
    };
    let v = printed::SendResult {
        outcome,
        result: Some("followed-up"),
        request_id: Some(id),
        transfer_id: r.transfer_id.as_deref(),
        ltn_number: r.ltn_number.as_deref(),
        status: r.transfer_status.as_deref(),
        charges: r.charges.as_ref(),
        ..printed::SendResult::default()
    };
    let (status, hint) = match state {
        State::Accepted => return Ok(out.success(&v)),
        State::Refused => (REFUSED, "refused: final, nothing done"),
        State::Pending => (
            output::PENDING,
            "still Pending at the end of the wait: not failed; follow it up again later",
        ),
        _ => (
            output::UNKNOWN,
            "still unknown at the end of the wait: keep the Request-id; resend or recover",
        ),
    };
    Err(out.failure(&v, &format!("Request-id {id}: {hint}"), status))
}

/// Report a failed status read by what it asked about.
fn status_failed(out: output::Out, q: &StatusQuery, e: &whish::transfer::Error) -> u8 {
    let asked = match q {
        StatusQuery::TransferId(t) => printed::Asked {
            transfer_id: Some(t.clone()),
            ..printed::Asked::default()
        },
        StatusQuery::LtnNumber(l) => printed::Asked {
            ltn_number: Some(l.clone()),
            ..printed::Asked::default()
        },
        StatusQuery::RequestId(r) => printed::Asked {
            request_id: Some(r.to_string()),
            ..printed::Asked::default()
        },
        StatusQuery::Several {
            transfer_id,
            ltn_number,
            request_id,
        } => printed::Asked {
            transfer_id: transfer_id.clone(),
            ltn_number: ltn_number.clone(),
            request_id: request_id.map(|r| r.to_string()),
        },
    };
    output::read_error(&out, e, &asked)
}

fn read_body(path: &std::path::Path) -> Result<String, u8> {
    crate::input::read_capped(path)
}

fn range(r: &Report) -> Result<ReportRange, u8> {
    let mut range = ReportRange::starting(&r.from)
        .and_then(|start| start.until(&r.to))
        .map_err(usage)?;
    if let Some(c) = r.currency {
        range = range.currency(currency(c));
    }
    Ok(range)
}

/// Which sends under another Request-id a body is held against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counted {
    /// Those whose outcome is still open (every one of them: the journal's open entries are
    /// read whole).
    Open,
    /// Those open or accepted, among the
    /// [`REPEAT_LOOKBACK`](whish::journal::REPEAT_LOOKBACK) most recent entries.
    OpenOrAccepted,
}

/// When the journal holds no send under `id` but holds this very body as a send under another
/// Request-id to the same service and account (`target`; an entry from before 0.4, which
/// records none, counts), in a state `counted` names: that id and its state. A resend under
/// `id` would then be a second transfer of a request already made (a mistyped or rounded id),
/// and so would a new send of a body whose first send's outcome is still open (the same file
/// sent again by hand); one whose journal knows nothing of the body (another process's send)
/// goes out, as the retry rule intends.
async fn same_body_elsewhere(
    journal: &whish::journal::Journal,
    target: &str,
    id: RequestId,
    body: &[u8],
    counted: Counted,
) -> Result<Option<(String, whish::journal::State)>, u8> {
    use whish::journal::Listing;
    let failed = |e: whish::journal::JournalError| usage(format!("journal: {e}"));
    let key = id.to_string();
    if counted == Counted::OpenOrAccepted {
        let mut found = None;
        journal
            .sends_that_may_have_paid(target, |s| {
                if found.is_none() && s.key != key && s.request == body {
                    found = Some((s.key.to_owned(), s.state));
                }
            })
            .await
            .map_err(failed)?;
        return Ok(found);
    }
    let open = journal
        .list(&Listing::new().open().limit(u32::MAX))
        .await
        .map_err(failed)?;
    Ok(open
        .into_iter()
        .find(|e| {
            e.may_have_paid(target) && !e.state.is_final() && e.key != key && e.request == body
        })
        .map(|e| (e.key, e.state)))
}

/// Refused before sending, the body being a send the journal holds under `other` (found as
/// `counted` says: by `send`, open; by `resend`, open or accepted): the failure object on
/// stdout (so that a script tells this refusal from a bad body, and finds the Request-id to
/// resend), what to do on stderr, exit 2.
fn a_repeat(
    out: &output::Out,
    id: RequestId,
    other: &str,
    state: whish::journal::State,
    counted: Counted,
) -> u8 {
    let held = state.as_str();
    let message = match counted {
        Counted::Open => format!(
            "this body was sent under Request-id {other} and its outcome is still open (the journal holds it {held}): sending it under {id} could make a second transfer. Resend it instead: `whish transfer resend --body FILE --request-id {other}`; to pay the same again on purpose, add --allow-repeat"
        ),
        Counted::OpenOrAccepted => format!(
            "this body was sent under Request-id {other} (the journal holds it {held}), not {id}: a resend under {id} would be a second transfer. Resend with `--request-id {other}`, or send it as a new transfer with `whish transfer send`"
        ),
    };
    let hint = format!("{message}; nothing was sent");
    out.failure(
        &printed::Failure::Repeat {
            outcome: whish::core::verdict::Verdict::NothingSent.as_str(),
            error: "same-body-elsewhere",
            message,
            idempotency_key: id.to_string(),
            held_under: other,
            held_state: held,
        },
        &hint,
        output::NOT_SENT,
    )
}

/// The one shape of a send's result, whichever way it was reached (sent, credited, confirmed
/// after a resend): every field always present (`null` when the way did not give it), the
/// Request-id always, `outcome` the verdict and `result` the way.
fn send_outcome(out: &output::Out, o: SendOutcome, request_id: RequestId) -> u8 {
    let accepted = printed::SendResult {
        outcome: "accepted",
        request_id: Some(request_id),
        ..printed::SendResult::default()
    };
    let v = match &o {
        SendOutcome::Sent(s) => printed::SendResult {
            result: Some("sent"),
            status: Some("SENT"),
            ltn_number: Some(&s.ltn_number),
            transfer_id: Some(&s.transfer_id),
            charges: s.charges.as_ref(),
            dialog: s.dialog.as_ref(),
            ..accepted
        },
        SendOutcome::Credited(w) => printed::SendResult {
            result: Some("credited"),
            status: Some("RECEIVED"),
            ltn_number: Some(&w.ltn_number),
            transfer_id: Some(&w.transfer_id),
            charges: w.charges.as_ref(),
            collection_amount: w.collection_amount.as_ref(),
            balance: w.balance.as_ref(),
            transaction_id: w.transaction_id,
            currency: w.currency.as_deref(),
            dialog: w.dialog.as_ref(),
            ..accepted
        },
        SendOutcome::Confirmed { status, .. } => printed::SendResult {
            result: Some("confirmed"),
            status: Some(status.status.as_str()),
            ltn_number: status.ltn_number.as_deref(),
            transfer_id: status.transfer_id.as_deref(),
            receiver_identity: status.receiver_identity.as_ref(),
            ..accepted
        },
        other => {
            return out.failure(
                &printed::UnknownOutcome {
                    outcome: "unknown",
                    id: printed::ByRequestId { request_id },
                    result: format!("{other:?}"),
                },
                "an outcome this version does not know: read the status by the Request-id",
                output::UNKNOWN,
            );
        }
    };
    out.success(&v)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SendFile {
    payment_mode: Option<String>,
    from_country: i64,
    to_country: Option<i64>,
    currency_id: i64,
    /// Kept as its raw JSON text: a number is read from its exact decimal text, never through a
    /// double (`99.999999999999999` must not become `100`).
    amount: Box<serde_json::value::RawValue>,
    sender: CustomerFile,
    receiver: CustomerFile,
    deduct_fees: Option<bool>,
    reason: String,
    source_of_funds: String,
    callback_url: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CustomerFile {
    first_name: String,
    middle_name: Option<String>,
    last_name: String,
    phone: String,
    extra_information: Option<String>,
    identity: Option<IdentityFile>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IdentityFile {
    nationality: Option<String>,
    date_birth: Option<String>,
}

impl CustomerFile {
    /// The customer and its identity; an identity must carry a real `dateBirth` (the service
    /// checks it whenever an identity is sent).
    fn build(self, role: &str) -> Result<(Customer, Option<Identity>), u8> {
        let mut c = Customer::new(
            FirstName::new(self.first_name),
            LastName::new(self.last_name),
            self.phone,
        );
        if let Some(m) = self.middle_name {
            c = c.middle_name(m);
        }
        if let Some(x) = self.extra_information {
            c = c.extra_information(x);
        }
        let identity = match self.identity {
            None => None,
            Some(i) => {
                let birth = i.date_birth.ok_or_else(|| {
                    usage(format!(
                        "send body: {role}.identity needs dateBirth (dd-MM-yyyy), or leave identity out"
                    ))
                })?;
                let birth = DateOfBirth::parse(&birth)
                    .map_err(|e| usage(format!("send body: {role}.{e}")))?;
                let mut identity = Identity::new(birth);
                if let Some(n) = i.nationality {
                    identity = identity.nationality(n);
                }
                Some(identity)
            }
        };
        Ok((c, identity))
    }
}

/// The spec-shaped body, through the SDK builders. Invalid: exit 2, nothing sent.
fn parse_send(text: &str) -> Result<SendRequest, u8> {
    let f: SendFile = serde_json::from_str(text).map_err(|e| usage(format!("send body: {e}")))?;
    if f.to_country.is_some_and(|c| c != 1) {
        return Err(usage("send body: toCountry is always 1 (Lebanon)"));
    }
    let currency = Currency::from_id(f.currency_id)
        .ok_or_else(|| usage("send body: currencyId is 1 (LBP) or 2 (USD)"))?;
    let raw = f.amount.get().trim();
    let amount_text = if raw.starts_with('"') {
        serde_json::from_str::<String>(raw).map_err(|e| usage(format!("send body: amount: {e}")))?
    } else if raw.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        raw.to_owned()
    } else {
        return Err(usage("send body: amount must be a number"));
    };
    let amount: Amount = amount_text
        .parse()
        .map_err(|e| usage(format!("send body: amount: {e}")))?;
    let reason: Reason = f.reason.parse().map_err(usage)?;
    let source: SourceOfFunds = f.source_of_funds.parse().map_err(usage)?;
    let from = CountryId::new(f.from_country).map_err(usage)?;
    let (sender, sender_identity) = f.sender.build("sender")?;
    let sender = Sender::new(match sender_identity {
        Some(i) => sender.identity(i),
        None => sender,
    });
    let (receiver, receiver_identity) = f.receiver.build("receiver")?;
    let deduct = f.deduct_fees.unwrap_or(false);
    match f.payment_mode.as_deref().unwrap_or("CASH_COLLECTION") {
        "CASH_COLLECTION" => {
            let identity = receiver_identity.ok_or_else(|| {
                usage("send body: a cash-collection receiver needs identity.dateBirth (dd-MM-yyyy)")
            })?;
            let mut s = CashCollectionSend::new(
                from,
                currency,
                amount,
                sender,
                CashReceiver::new(receiver, identity),
                reason,
                source,
            )
            .deduct_fees(deduct);
            if let Some(u) = f.callback_url {
                s = s.callback_url(u);
            }
            Ok(s.into())
        }
        "MOBILE_WALLET" => {
            if f.callback_url.is_some() {
                return Err(usage("send body: a mobile-wallet send has no callbackUrl"));
            }
            let receiver = match receiver_identity {
                Some(i) => receiver.identity(i),
                None => receiver,
            };
            Ok(MobileWalletSend::new(
                from,
                currency,
                amount,
                sender,
                WalletReceiver::new(receiver),
                reason,
                source,
            )
            .deduct_fees(deduct)
            .into())
        }
        other => Err(usage(format!(
            "send body: paymentMode `{other}` is not CASH_COLLECTION or MOBILE_WALLET"
        ))),
    }
}
