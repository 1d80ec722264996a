//! Outcome truth: the faults that made the SDK report a false outcome, each reproduced against
//! the sandbox: a dropped future, a proxy's page after a timeout, a refused key run again, a
//! confirmation that cannot be read, and a recovery report that hid an entry another process
//! held.

use crate::support;

use std::time::Duration;

use crate::support::{
    cash_send, collect, payment, places, sandbox, topup, transfer, transfers_with,
};
use whish_core::{CallOptions, Currency, RequestId, verdict::Verdict};
use whish_intl_topup::PayOutcome;
use whish_journal::{Clients, Operation, Recovery, Service, State};
use whish_money_transfer::{SendOutcome, TransferCode};
use whish_sandbox::{Endpoint, Fault};

/// Long enough for the request to reach the sandbox and be applied, far shorter than a stall.
const CUT: Duration = Duration::from_millis(400);

/// Each money-moving call, wrapped in a caller's `tokio::time::timeout` while the service
/// stalls after applying it, then sent again with the same prepared request: the second answer
/// (`transfer.already.done`, `transfer.cannot_be_canceled`, a replay) is read as a confirmation,
/// never as a refusal, and nothing is applied twice.
#[tokio::test]
async fn a_dropped_future_counts_as_may_have_arrived() {
    let sb = sandbox().await;

    // Transfer send.
    let t = transfer(&sb, 0);
    let prepared = t.prepare_send(cash_send(50)).expect("prepare");
    sb.inject(Endpoint::TransferSend, Fault::Stall, 1);
    assert!(tokio::time::timeout(CUT, t.send(&prepared)).await.is_err());
    assert!(
        prepared.may_have_arrived(),
        "the mark went on before the bytes left"
    );
    let again = t
        .send(&prepared)
        .await
        .expect("a confirmation, not a refusal");
    assert!(matches!(again, SendOutcome::Confirmed { .. }), "{again:?}");
    assert_eq!(transfers_with(&sb, prepared.request_id().get()), 1);

    // Transfer cancel.
    let sent = t
        .send(&t.prepare_send(cash_send(20)).expect("prepare"))
        .await
        .expect("sent");
    let cancel = t
        .prepare_cancel(sent.ltn_number().expect("an LTN"), None)
        .expect("prepare");
    sb.inject(Endpoint::TransferCancel, Fault::Stall, 1);
    assert!(tokio::time::timeout(CUT, t.cancel(&cancel)).await.is_err());
    let applied = t.cancel(&cancel).await.expect("the earlier cancel applied");
    assert_eq!(applied.status.to_string(), "CANCELED_FULL");

    // Collect create and refund.
    let c = collect(&sb, 0);
    let created = c.prepare_payment(payment(1500)).expect("prepare");
    sb.inject(Endpoint::CollectCreate, Fault::Stall, 1);
    assert!(
        tokio::time::timeout(CUT, c.create_payment(&created))
            .await
            .is_err()
    );
    let again = c.create_payment(&created).await.expect("replayed");
    assert!(again.retrieved, "the replay of the first create");
    sb.pay_link(created.external_id().as_str())
        .await
        .expect("paid");
    let refund = c
        .prepare_refund(Currency::Usd, created.external_id(), None)
        .expect("prepare");
    sb.inject(Endpoint::CollectRefund, Fault::Stall, 1);
    assert!(tokio::time::timeout(CUT, c.refund(&refund)).await.is_err());
    assert!(c.refund(&refund).await.expect("replayed").retrieved);

    // Top-up pay.
    let u = topup(&sb, 0);
    let offer = u
        .fetch_options(
            whish_intl_topup::ProviderId::new("etisalat-ae"),
            "+971501234567",
        )
        .await
        .expect("options");
    let pay = u.prepare_pay(&offer.options()[0]).expect("prepare");
    sb.inject(Endpoint::TopupPay, Fault::Stall, 1);
    assert!(tokio::time::timeout(CUT, u.pay(&pay)).await.is_err());
    match u.pay(&pay).await.expect("replayed") {
        PayOutcome::Paid(p) => assert!(p.retrieved),
        other => panic!("{other:?}"),
    }
    let sales = sb
        .sales()
        .into_iter()
        .filter(|s| s.external_id == pay.external_id().as_str())
        .count();
    assert_eq!(sales, 1);
}

/// A total deadline per call: the error says how many attempts were made and that the request
/// may have arrived, and the prepared request's mark stays set.
#[tokio::test]
async fn a_call_deadline_ends_in_an_unknown_outcome_with_the_key() {
    let sb = sandbox().await;
    let t = transfer(&sb, 3).with_options(CallOptions::new().deadline(CUT));
    let prepared = t.prepare_send(cash_send(30)).expect("prepare");
    sb.inject(Endpoint::TransferSend, Fault::Stall, 1);
    let e = t.send(&prepared).await.expect_err("the deadline passed");
    assert_eq!(e.verdict(), Verdict::Unknown, "{e}");
    assert_eq!(
        e.idempotency_key(),
        Some(prepared.request_id().to_string().as_str())
    );
    assert!(prepared.may_have_arrived());
    // And the connect failure of a deadline-free call to nowhere is nothing sent, and leaves
    // the mark as it found it.
    let nowhere = support::transfer_at("http://127.0.0.1:9/api", &sb, 0);
    let fresh = nowhere.prepare_send(cash_send(30)).expect("prepare");
    let e = nowhere.send(&fresh).await.expect_err("nothing listens");
    assert_eq!(e.verdict(), Verdict::NothingSent, "{e}");
    assert!(!fresh.may_have_arrived());
}

/// A proxy's page (403, 429) after an attempt that timed out proves nothing: unknown, and the
/// journal keeps the entry open; so does the same page on a first attempt.
#[tokio::test]
async fn a_proxy_page_after_a_timeout_is_unknown_not_refused() {
    for place in places("proxy_page").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 1));
        for status in [403, 429] {
            let prepared = t.client().prepare_send(cash_send(40)).expect("prepare");
            sb.inject(
                Endpoint::TransferSend,
                Fault::Delay(Duration::from_secs(3)),
                1,
            );
            sb.inject(Endpoint::TransferSend, Fault::Page(status), 1);
            let e = t.send(&prepared).await.expect_err("a page");
            assert_eq!(e.verdict(), Verdict::Unknown, "{status}: {e}");
            assert!(e.outcome_unknown() && !e.is_refused());
            let key = prepared.request_id().to_string();
            let entry =
                support::entry_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await;
            assert_eq!(entry.state, State::MayHaveArrived, "{status}");
            assert_eq!(transfers_with(&sb, prepared.request_id().get()), 1);
        }
        // A first attempt answered 403 by something in front of the service (the transfer
        // service itself answers every request with HTTP 200): it may have passed the request on
        // before it answered (a WAF that blocks the reply), so unknown, the entry open. Here the
        // page was answered instead of the sandbox, and recovery's resend is the first arrival.
        let prepared = t.client().prepare_send(cash_send(40)).expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::Page(403), 1);
        let e = t.send(&prepared).await.expect_err("a page");
        assert_eq!(e.verdict(), Verdict::Unknown, "{e}");
        let key = prepared.request_id().to_string();
        let entry =
            support::entry_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await;
        assert_eq!(entry.state, State::MayHaveArrived);
        assert_eq!(transfers_with(&sb, prepared.request_id().get()), 0);
        // A first attempt answered 429 on every attempt: unknown (the entry stays open and
        // recovery resends it with the same key, which is what a rate limit wants).
        let prepared = t.client().prepare_send(cash_send(40)).expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::Page(429), 2);
        let e = t.send(&prepared).await.expect_err("a page");
        assert_eq!(e.verdict(), Verdict::Unknown, "{e}");
        journal.close().await;
    }
}

/// `transfer.already.done` on a first attempt: the Request-id belongs to another transfer.
/// Refused, and the same request run again is not sent (it would be read as a resend and
/// confirm the other transfer).
#[tokio::test]
async fn a_refused_key_run_again_is_not_sent_and_confirms_nothing() {
    for place in places("refused_again").await {
        let sb = sandbox().await;
        let plain = transfer(&sb, 0);
        let other = plain.prepare_send(cash_send(70)).expect("prepare");
        let _ = plain.send(&other).await.expect("someone else's transfer");
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        // The same Request-id for a different transfer.
        let mine = t
            .client()
            .prepare_send(cash_send(25).request_id(other.request_id()))
            .expect("prepare");
        let e = t.send(&mine).await.expect_err("refused");
        assert_eq!(e.code(), Some(&TransferCode::TransferAlreadyDone));
        assert_eq!(e.verdict(), Verdict::Refused, "{e}");
        let before = sb.requests().len();
        let again = t
            .send(&mine)
            .await
            .expect_err("refused again, not confirmed");
        assert_eq!(again.verdict(), Verdict::Refused, "{again}");
        assert!(
            again
                .to_string()
                .contains("was refused with `transfer.already.done`"),
            "{again}"
        );
        assert_eq!(sb.requests().len(), before, "nothing was sent");
        let resend = t.resend(&mine).await.expect_err("not resent either");
        assert_eq!(resend.verdict(), Verdict::Refused, "{resend}");
        assert_eq!(sb.requests().len(), before, "nothing was sent");
        let key = mine.request_id().to_string();
        let entry =
            support::entry_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await;
        assert_eq!(entry.state, State::Refused);
        journal.close().await;
    }
}

/// A resend that meets `transfer.already.done`, whose status read then answers a code: the
/// answers contradict each other, so the outcome is unknown and the entry stays open.
#[tokio::test]
async fn a_confirmation_that_cannot_be_read_is_unknown() {
    for place in places("unread_confirmation").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        for code in ["sending.transfer.invalid.info", "transfer.not_exists"] {
            let prepared = t.client().prepare_send(cash_send(60)).expect("prepare");
            sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
            let first = t.send(&prepared).await.expect_err("the reply was lost");
            assert_eq!(first.verdict(), Verdict::Unknown);
            sb.inject(Endpoint::TransferStatus, Fault::Code(code), 1);
            let e = t.resend(&prepared).await.expect_err("unconfirmed");
            assert_eq!(e.code(), Some(&TransferCode::TransferAlreadyDone));
            assert_eq!(e.verdict(), Verdict::Unknown, "{code}: {e}");
            let key = prepared.request_id().to_string();
            let entry =
                support::entry_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await;
            assert_eq!(entry.state, State::MayHaveArrived, "{code}");
            // Once the status answers, the same resend confirms it.
            let ok = t.resend(&prepared).await.expect("confirmed");
            assert!(matches!(ok, SendOutcome::Confirmed { .. }));
        }
        journal.close().await;
    }
}

/// Recovery run while another process holds an entry (sending it now, or dead with its lease
/// not yet expired) says so: the entry is listed with its owner and lease, and `all_final` is
/// false.
#[tokio::test]
async fn the_recovery_report_never_hides_an_open_entry() {
    for place in places("held_elsewhere").await {
        let sb = sandbox().await;
        let sender = whish_journal::Journal::builder(place.url())
            .lease(Duration::from_secs(60))
            .open()
            .await
            .expect("open");
        let t = sender.transfer(transfer(&sb, 0));
        let prepared = t.client().prepare_send(cash_send(45)).expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::Stall, 1);
        // The sender is killed mid-call: its future is dropped with the lease still on.
        assert!(tokio::time::timeout(CUT, t.send(&prepared)).await.is_err());
        let recoverer = place.open().await;
        let report = recoverer
            .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
            .await
            .expect("recover");
        assert_eq!(report.examined, 0);
        assert_eq!(report.held_elsewhere.len(), 1, "{report:?}");
        let held = &report.held_elsewhere[0];
        assert_eq!(held.key, prepared.request_id().to_string());
        assert_eq!(held.state, State::Intended);
        assert!(held.until > time::OffsetDateTime::now_utc());
        assert!(!report.all_final());
        recoverer.close().await;
        sender.close().await;
    }
}

/// A first attempt the service applied, answered by a page from something in front of it (a
/// WAF that blocked the reply): never a refusal (the old reading, "turned away", told a caller
/// to pay again under a new key while the transfer stood). Unknown, the entry open; recovery
/// confirms it with the same key, and the service holds one transfer.
#[tokio::test]
async fn a_page_after_the_service_applied_a_first_attempt_is_unknown_then_confirmed() {
    for place in places("applied_page").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let prepared = t.client().prepare_send(cash_send(35)).expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::AppliedPage(403), 1);
        let e = t.send(&prepared).await.expect_err("a page");
        assert_eq!(e.verdict(), Verdict::Unknown, "{e}");
        assert!(e.outcome_unknown() && !e.is_refused());
        let id = prepared.request_id();
        let key = id.to_string();
        let state = async || {
            support::entry_of(&journal, Service::MoneyTransfer, Operation::Send, &key)
                .await
                .state
        };
        assert_eq!(state().await, State::MayHaveArrived);
        assert_eq!(transfers_with(&sb, id.get()), 1, "the service applied it");
        let report = journal
            .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
            .await
            .expect("recover");
        assert!(report.all_final(), "{report:?}");
        assert_eq!(state().await, State::Accepted);
        assert_eq!(transfers_with(&sb, id.get()), 1, "never a second transfer");
        journal.close().await;
    }
}

/// Ids generated by one process never repeat and are positive Longs.
#[test]
fn request_ids_are_positive_and_distinct() {
    let ids: std::collections::HashSet<i64> =
        (0..10_000).map(|_| RequestId::generate().get()).collect();
    assert_eq!(ids.len(), 10_000);
    assert!(ids.iter().all(|&i| i >= 1_000_000_000));
}

/// The same request sent while another process holds its entry (sending it now, or recovering
/// it): this call sends nothing, and says the outcome is unknown, never "nothing was sent" (the
/// truth checker found a cancel reported not sent while a racing recovery had applied it).
#[tokio::test]
async fn a_request_held_by_another_process_is_unknown_not_unsent() {
    for place in places("held_by_another").await {
        let sb = sandbox().await;
        let holder = whish_journal::Journal::builder(place.url())
            .lease(Duration::from_secs(60))
            .open()
            .await
            .expect("open");
        let t = holder.transfer(transfer(&sb, 0));
        let prepared = t.client().prepare_send(cash_send(46)).expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::Stall, 1);
        assert!(tokio::time::timeout(CUT, t.send(&prepared)).await.is_err());
        let other = place.open().await;
        let again = other
            .transfer(transfer(&sb, 0))
            .send(&prepared)
            .await
            .expect_err("held elsewhere");
        assert_eq!(again.verdict(), Verdict::Unknown, "{again}");
        assert!(again.outcome_unknown() && !again.nothing_sent());
        other.close().await;
        holder.close().await;
    }
}
