//! Races and collisions where the SDK, the journal or the recovery report could say something
//! the sandbox contradicts: an applied cancel read by a code, two tasks sending one prepared
//! transfer, a refusal that could not be recorded, entries released during a recovery, an account
//! code on a resend, a Request-id collision. Each asserts the truth.

use crate::support;

use std::time::Duration;

use crate::support::{cash_send, places, sandbox, transfer, transfer_at, transfers_with};
use rust_decimal::Decimal;
use whish_core::verdict::Verdict;
use whish_journal::{Clients, Operation, Recovery, Service, State};
use whish_sandbox::{Endpoint, Fault};

/// A "proxy" in front of the service that holds every connection for `stall`, then answers an
/// HTML 403 page without passing anything on. Returns its base URL (with `/api`).
async fn lying_proxy(stall: Duration) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                // Read whatever arrives (the request), without io-util.
                let mut buf = [0u8; 8192];
                let started = tokio::time::Instant::now();
                while started.elapsed() < stall {
                    let _ = tokio::time::timeout(Duration::from_millis(20), sock.readable()).await;
                    if let Ok(0) = sock.try_read(&mut buf) {
                        return;
                    }
                }
                let body = "<html><body><h1>403 Forbidden</h1></body></html>";
                let reply = format!(
                    "HTTP/1.1 403 Forbidden\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let mut left = reply.as_bytes();
                while !left.is_empty() {
                    if sock.writable().await.is_err() {
                        return;
                    }
                    match sock.try_write(left) {
                        Ok(n) => left = &left[n..],
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(_) => return,
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            });
        }
    });
    format!("http://{addr}/api")
}

/// PROBE 1. A journaled cancel is applied but its reply is lost (entry open). Recovery reads the
/// status by LTN, and the status read answers a failure code (a lying/overloaded status
/// endpoint). Recovery records the cancel `refused` (final, never sent again) while the
/// sandbox holds the transfer CANCELED_FULL.
#[tokio::test]
async fn an_applied_cancel_stays_open_when_the_recoverys_status_read_answers_a_code() {
    for place in places("adv_cancel_status_code").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let sent = t
            .send(&t.client().prepare_send(cash_send(21)).expect("prepare"))
            .await
            .expect("sent");
        let ltn = sent.ltn_number().expect("ltn").to_owned();
        let cancel = t.client().prepare_cancel(&ltn, None).expect("prepare");
        sb.inject(Endpoint::TransferCancel, Fault::DropReply, 1);
        let e = t.cancel(&cancel).await.expect_err("reply lost");
        assert!(e.outcome_unknown(), "{e}");
        journal.close().await;

        tokio::time::sleep(support::LEASE * 2).await;
        sb.inject(
            Endpoint::TransferStatus,
            Fault::Code("api.account.invalid_request"),
            1,
        );
        let recoverer = place.open().await;
        let report = recoverer
            .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
            .await
            .expect("recover");
        let entry = support::entry_of(
            &recoverer,
            Service::MoneyTransfer,
            Operation::Cancel,
            &cancel.request_id().to_string(),
        )
        .await;
        let truth = sb
            .transfers()
            .into_iter()
            .find(|r| r.ltn_number == ltn)
            .expect("transfer")
            .status;
        eprintln!(
            "PROBE1 journal state={} outcome={:?} all_final={} | sandbox status={truth}",
            entry.state,
            entry.outcome,
            report.all_final()
        );
        assert_eq!(truth, "CANCELED_FULL");
        assert_ne!(
            entry.state,
            State::Refused,
            "FALSE REPORT: the journal says the cancel was refused (final), the sandbox says CANCELED_FULL"
        );
        recoverer.close().await;
    }
}

/// PROBE 2. One prepared transfer sent from two tasks at once. Task A goes through a proxy that
/// stalls, then answers a 403 page; task B reaches the service directly and is applied. A
/// started first (its mark was clear), so A reads its 403 as a first-attempt refusal and, on
/// completion, puts the shared mark back to "never sent" although B's attempt arrived. A third
/// send of the same prepared transfer then reads `transfer.already.done` as "the key belongs
/// to another transfer": refused, while the sandbox holds exactly this request's transfer.
#[tokio::test]
async fn two_tasks_sending_one_prepared_transfer_never_undo_each_others_mark() {
    let sb = sandbox().await;
    let via_proxy = transfer_at(&lying_proxy(Duration::from_millis(600)).await, &sb, 0);
    let direct = transfer(&sb, 0);
    let prepared = direct.prepare_send(cash_send(61)).expect("prepare");

    let a = tokio::spawn({
        let c = via_proxy.clone();
        let p = prepared.clone();
        async move { c.send(&p).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(prepared.may_have_arrived(), "A set the mark");
    let b = direct.send(&prepared).await;
    eprintln!("PROBE2 B: {b:?}");
    assert!(b.is_ok(), "B was applied");
    let a = a.await.expect("join");
    let a_verdict = a.as_ref().err().map(whish_core::Error::verdict);
    eprintln!(
        "PROBE2 A verdict: {a_verdict:?}; mark after A: {}",
        prepared.may_have_arrived()
    );
    let c = direct.send(&prepared).await;
    let c_verdict = c.as_ref().err().map(whish_core::Error::verdict);
    eprintln!("PROBE2 C: {c_verdict:?} {c:?}");
    let held = transfers_with(&sb, prepared.request_id().get());
    eprintln!("PROBE2 sandbox transfers with this Request-id: {held}");
    assert_eq!(held, 1);
    assert_ne!(
        c_verdict,
        Some(Verdict::Refused),
        "FALSE REPORT: the third send of the same prepared transfer is refused (key of another transfer) while the sandbox holds its transfer"
    );
    assert_ne!(
        a_verdict,
        Some(Verdict::Refused),
        "FALSE REPORT: A says refused (a new attempt needs a new key) while the request was applied"
    );
}

/// PROBE 3. A journaled first send is refused by the service (insufficient funds). The journal
/// cannot write the outcome (its pool is closed under it: a database that went away); the
/// caller still gets "refused" (final, a new attempt needs a new key, exit 1) while the entry
/// stays `intended`. After the balance is topped up, recovery resends the same request and
/// the service creates the transfer the caller was told was refused.
#[tokio::test]
async fn a_refusal_the_journal_could_not_record_is_not_told_as_final() {
    for place in places("adv_unrecorded_refusal").await {
        let sb = sandbox().await;
        sb.set_transfer_balance("USD", Decimal::ZERO)
            .expect("balance");
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let prepared = t.client().prepare_send(cash_send(71)).expect("prepare");
        // The service computes its answer (a refusal), then takes a while to send it.
        sb.inject(
            Endpoint::TransferSend,
            Fault::Delay(Duration::from_millis(600)),
            1,
        );
        let sending = tokio::spawn({
            let t = t.clone();
            let p = prepared.clone();
            async move { t.send(&p).await }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        journal.close().await; // the database goes away while the call is in flight
        let answer = sending.await.expect("join");
        let verdict = answer.as_ref().err().map(whish_core::Error::verdict);
        eprintln!("PROBE3 caller got {verdict:?}: {answer:?}");

        sb.set_transfer_balance("USD", Decimal::from(1_000_000u64))
            .expect("balance");
        tokio::time::sleep(support::LEASE * 2).await;
        let recoverer = place.open().await;
        let key = prepared.request_id().to_string();
        let before =
            support::entry_of(&recoverer, Service::MoneyTransfer, Operation::Send, &key).await;
        eprintln!("PROBE3 journal before recovery: {}", before.state);
        let report = recoverer
            .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
            .await
            .expect("recover");
        let after =
            support::entry_of(&recoverer, Service::MoneyTransfer, Operation::Send, &key).await;
        let held = transfers_with(&sb, prepared.request_id().get());
        eprintln!(
            "PROBE3 journal after recovery: {} changes={:?}; sandbox transfers: {held}",
            after.state, report.changes
        );
        recoverer.close().await;
        assert!(
            !(verdict == Some(Verdict::Refused) && held == 1),
            "FALSE REPORT: the caller was told refused (exit 1, new key needed), the journal kept the entry {} and recovery created the transfer",
            before.state
        );
    }
}

/// PROBE 4. Recovery runs while a live sender holds entry E (lower id). Recovery works on
/// another entry F (higher id) slowly; meanwhile the sender ends E as `may-have-arrived` and
/// lets its lease go. Recovery's cursor is past E and E is no longer leased, so the report
/// neither examines nor lists it: `all_final()` is true while E is open.
#[tokio::test]
async fn the_recovery_report_looks_again_at_entries_released_during_the_run() {
    for place in places("adv_report_hides").await {
        let sb = sandbox().await;
        let live = place.open().await;
        let t = live.transfer(transfer(&sb, 0)); // attempt timeout 1.5 s
        let e_send = t.client().prepare_send(cash_send(81)).expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::Stall, 1);
        let sending = tokio::spawn({
            let t = t.clone();
            let p = e_send.clone();
            async move { t.send(&p).await }
        });
        tokio::time::sleep(Duration::from_millis(150)).await;

        // F: another process's send whose reply was lost.
        let other = place.open().await;
        let f_send = other
            .transfer(transfer(&sb, 0))
            .client()
            .prepare_send(cash_send(82))
            .expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
        let f = other
            .transfer(transfer(&sb, 0))
            .send(&f_send)
            .await
            .expect_err("lost");
        assert!(f.outcome_unknown());
        other.close().await;

        // Recovery's resend of F is slow.
        sb.inject(
            Endpoint::TransferSend,
            Fault::Delay(Duration::from_millis(2500)),
            1,
        );
        let recoverer = place.open().await;
        let patient = transfer(&sb, 0)
            .with_options(whish_core::CallOptions::new().attempt_timeout(Duration::from_secs(5)));
        let report = recoverer
            .recover(&Clients::new().transfer(patient), &Recovery::new())
            .await
            .expect("recover");
        let e_answer = sending.await.expect("join");
        let e_entry = support::entry_of(
            &recoverer,
            Service::MoneyTransfer,
            Operation::Send,
            &e_send.request_id().to_string(),
        )
        .await;
        eprintln!(
            "PROBE4 E answer={:?}; E journal state={}; report examined={} still_open={} held_elsewhere={} all_final={}",
            e_answer.as_ref().err().map(whish_core::Error::verdict),
            e_entry.state,
            report.examined,
            report.still_open,
            report.held_elsewhere.len(),
            report.all_final()
        );
        recoverer.close().await;
        live.close().await;
        assert!(
            !(report.all_final() && e_entry.state.is_open()),
            "FALSE REPORT: recovery says every open entry is final; entry E is {}",
            e_entry.state
        );
    }
}

/// PROBE 5. A send applied by the service whose reply is lost, resent by the SDK under the same
/// Request-id, and the resend meets a failure code that says nothing about the first attempt
/// (`api.account.invalid_request`, a code of every endpoint). The SDK, the journal and the
/// command call it refused (final, a new Request-id for a new attempt) while the transfer
/// exists. (The decision table's "any | a failure code | refused" row.)
#[tokio::test]
async fn an_account_code_on_a_resend_after_an_applied_attempt_is_unknown() {
    for place in places("adv_code_after_drop").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 1));
        let prepared = t.client().prepare_send(cash_send(91)).expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
        sb.inject(
            Endpoint::TransferSend,
            Fault::Code("api.account.invalid_request"),
            1,
        );
        let e = t.send(&prepared).await.expect_err("code");
        let entry = support::entry_of(
            &journal,
            Service::MoneyTransfer,
            Operation::Send,
            &prepared.request_id().to_string(),
        )
        .await;
        let held = transfers_with(&sb, prepared.request_id().get());
        eprintln!(
            "PROBE5 verdict={} journal={} sandbox transfers={held}",
            e.verdict(),
            entry.state
        );
        journal.close().await;
        assert!(
            !(e.verdict() == Verdict::Refused && held == 1),
            "FALSE REPORT: refused (journal {}) while the sandbox holds the transfer",
            entry.state
        );
    }
}

/// PROBE 6. A Request-id collision (a caller's own numeric reference reused, as the spec and
/// `whish transfer send --request-id` allow): transfer X ($10) exists under Request-id N. A
/// different transfer Y ($99) is journaled under the same N; its only attempt is dropped
/// before the service (nothing applied: the SDK rightly says unknown). Recovery resends Y
/// (rebuilt marked "sent before"), meets `transfer.already.done`, reads the status by N, gets
/// X, and records Y `accepted`/confirmed with X's LTN, while the sandbox holds no $99 transfer.
#[tokio::test]
async fn a_request_id_collision_is_not_confirmed_as_the_callers_own() {
    for place in places("adv_collision").await {
        let sb = sandbox().await;
        let n =
            whish_core::RequestId::new(1_000_000_000 + i64::from(fastrand::u32(..))).expect("id");
        let direct = transfer(&sb, 0);
        let x = direct
            .send(
                &direct
                    .prepare_send(cash_send(10).request_id(n))
                    .expect("prepare"),
            )
            .await
            .expect("X sent");
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let y = t
            .client()
            .prepare_send(cash_send(99).request_id(n))
            .expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
        let e = t.send(&y).await.expect_err("dropped before the service");
        eprintln!("PROBE6 Y first send: {}", e.verdict());
        journal.close().await;

        tokio::time::sleep(support::LEASE * 2).await;
        let recoverer = place.open().await;
        let report = recoverer
            .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
            .await
            .expect("recover");
        let entry = support::entry_of(
            &recoverer,
            Service::MoneyTransfer,
            Operation::Send,
            &n.to_string(),
        )
        .await;
        let ninety_nine = sb
            .transfers()
            .iter()
            .filter(|r| r.request_id == n.get() && r.total >= Decimal::from(99))
            .count();
        eprintln!(
            "PROBE6 Y journal={} refs={:?} (X's LTN {:?}); changes={:?}; sandbox $99 transfers={ninety_nine}",
            entry.state,
            entry.references.ltn_number,
            x.ltn_number(),
            report
                .changes
                .iter()
                .map(|c| (&c.to, &c.outcome.result))
                .collect::<Vec<_>>()
        );
        recoverer.close().await;
        assert!(
            !(entry.state == State::Accepted && ninety_nine == 0),
            "FALSE REPORT: Y recorded accepted with X's transfer; the sandbox holds no Y"
        );
    }
}
