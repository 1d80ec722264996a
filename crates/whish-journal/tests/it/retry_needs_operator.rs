//! `Recovery::retry_needs_operator(true)`, a person's word to settle
//! the entries waiting for the operator. Each probe asserts what the sandbox holds against what
//! the journal and the recovery report say, on SQLite and (with WHISH_TEST_POSTGRES_URL) on
//! PostgreSQL.

use crate::support;

use std::time::Duration;

use crate::support::{
    cash_send, journal_sql, lost_and_applied_for_the_operator, places, sandbox, state_of, topup,
    transfer, transfers_with,
};
use whish_journal::{Clients, Operation, Recovery, Service, State};
use whish_sandbox::{Endpoint, Fault};

/// The lies found, one for each place (SQLite, PostgreSQL), all told at the end.
fn tell(lies: Vec<String>) {
    assert!(lies.is_empty(), "{}", lies.join("\n"));
}

/// What each transfer the sandbox holds under a Request-id charged (amount plus fee).
fn totals_with(sb: &whish_sandbox::Sandbox, request_id: i64) -> Vec<String> {
    sb.transfers()
        .iter()
        .filter(|t| t.request_id == request_id)
        .map(|t| t.total.normalize().to_string())
        .collect()
}

/// A send that never arrived (the connection closed before the service applied it) is left
/// open, then goes to the operator after the deadline. Meanwhile the account's Request-id is
/// used by someone else's transfer of another amount (a caller's own numeric reference, the
/// collision the SDK's resend guards against with the activity log). A person retries the
/// needs-operator entries: the status read by Request-id returns the other transfer, which
/// never confirms this send. (The same entry recovered while still open is resent and meets
/// `transfer.already.done`: see `an_open_send_whose_request_id_is_someone_elses_is_not_confirmed`.)
#[tokio::test]
async fn a_retried_send_is_not_confirmed_by_someone_elses_transfer() {
    let mut lies = Vec::new();
    for place in places("operator-someone-else").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let mine = t.client().prepare_send(cash_send(25)).expect("prepare");
        let id = mine.request_id();
        let key = id.to_string();
        sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
        assert!(
            t.send(&mine).await.expect_err("dropped").outcome_unknown(),
            "setup: unknown"
        );
        assert_eq!(transfers_with(&sb, id.get()), 0, "setup: never arrived");
        // Someone else's transfer of 70 USD under the same Request-id.
        let plain = transfer(&sb, 0);
        let other = plain
            .prepare_send(cash_send(70).request_id(id))
            .expect("prepare");
        let _ = plain.send(&other).await.expect("someone else's transfer");
        let theirs = totals_with(&sb, id.get())
            .pop()
            .expect("setup: their transfer");
        assert!(
            theirs.starts_with('7'),
            "setup: 70 USD and its fee: {theirs}"
        );
        assert_eq!(
            totals_with(&sb, id.get()),
            std::slice::from_ref(&theirs),
            "setup"
        );
        let clients = Clients::new().transfer(transfer(&sb, 0));
        let report = journal
            .recover(&clients, &Recovery::new().deadline(Duration::ZERO))
            .await
            .expect("recover");
        assert_eq!(report.needs_operator, 1, "setup: {report:?}");
        assert_eq!(
            state_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await,
            State::NeedsOperator,
            "setup"
        );

        let report = journal
            .recover(&clients, &Recovery::new().retry_needs_operator(true))
            .await
            .expect("recover");
        let entry =
            support::entry_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await;
        // The truth: the service holds no 25 USD transfer for this entry, only someone else's
        // 70 USD one.
        assert_eq!(totals_with(&sb, id.get()), std::slice::from_ref(&theirs));
        if entry.state == State::Accepted || report.all_final() {
            lies.push(format!(
                "{place:?}: the journal records this 25 USD send {} ({:?}, refs {:?}), all_final {}, \
                 while the sandbox holds only someone else's transfer ({theirs} charged) under its \
                 Request-id",
                entry.state,
                entry.outcome,
                entry.references,
                report.all_final()
            ));
        }
        journal.close().await;
    }
    tell(lies);
}

/// Held up: the same collision while the entry is still open (may-have-arrived). Recovery
/// resends it, meets `transfer.already.done`, reads the activity log and sees another amount:
/// not confirmed, the entry stays open.
#[tokio::test]
async fn an_open_send_whose_request_id_is_someone_elses_is_not_confirmed() {
    for place in places("operator-someone-else-open").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let mine = t.client().prepare_send(cash_send(25)).expect("prepare");
        let id = mine.request_id();
        let key = id.to_string();
        sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
        assert!(t.send(&mine).await.expect_err("dropped").outcome_unknown());
        let plain = transfer(&sb, 0);
        let other = plain
            .prepare_send(cash_send(70).request_id(id))
            .expect("prepare");
        let _ = plain.send(&other).await.expect("someone else's transfer");
        let theirs = totals_with(&sb, id.get())
            .pop()
            .expect("setup: their transfer");
        assert!(
            theirs.starts_with('7'),
            "setup: 70 USD and its fee: {theirs}"
        );
        let clients = Clients::new().transfer(transfer(&sb, 0));
        let report = journal
            .recover(&clients, &Recovery::new())
            .await
            .expect("recover");
        assert_ne!(
            state_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await,
            State::Accepted,
            "{report:?}"
        );
        assert!(!report.all_final(), "{report:?}");
        assert_eq!(totals_with(&sb, id.get()), std::slice::from_ref(&theirs));
        journal.close().await;
    }
}

/// Two operators retry the needs-operator entries at once (two processes, one journal). The
/// first holds the entry while its status read is in flight (the service answers slowly). The
/// second neither touches it nor hides it: the entry is in its `held_elsewhere`, and its report
/// is not `all_final()`.
#[tokio::test]
async fn a_needs_operator_entry_another_process_is_settling_is_not_hidden() {
    let mut lies = Vec::new();
    for place in places("operator-held").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let mine = t.client().prepare_send(cash_send(30)).expect("prepare");
        let key = mine.request_id().to_string();
        sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
        assert!(t.send(&mine).await.expect_err("dropped").outcome_unknown());
        let clients = Clients::new().transfer(transfer(&sb, 0));
        let report = journal
            .recover(&clients, &Recovery::new().deadline(Duration::ZERO))
            .await
            .expect("recover");
        assert_eq!(report.needs_operator, 1, "setup: {report:?}");
        journal.close().await;

        // Process A: its status read is answered after 1.2 s.
        sb.inject(
            Endpoint::TransferStatus,
            Fault::Delay(Duration::from_millis(1200)),
            1,
        );
        // A holds through a 1.2 s read: its lease is not what this test is about.
        let a = place.open_steady().await;
        let a_clients = clients.clone();
        let first = tokio::spawn(async move {
            let r = a
                .recover(&a_clients, &Recovery::new().retry_needs_operator(true))
                .await
                .expect("recover A");
            a.close().await;
            r
        });
        // Until A's status read has reached the sandbox (A holds the entry, its call in flight).
        let started = std::time::Instant::now();
        while !sb
            .requests()
            .iter()
            .any(|r| r.endpoint == Endpoint::TransferStatus)
            && started.elapsed() < Duration::from_secs(10)
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Process B, while A is in flight.
        let b = place.open().await;
        let report_b = b
            .recover(&clients, &Recovery::new().retry_needs_operator(true))
            .await
            .expect("recover B");
        let state_during = state_of(&b, Service::MoneyTransfer, Operation::Send, &key).await;
        let report_a = first.await.expect("join");
        assert_eq!(
            report_a.examined, 1,
            "setup: A worked the entry: {report_a:?}"
        );
        assert_eq!(report_b.examined, 0, "B did not touch it: {report_b:?}");
        assert_eq!(state_during, State::NeedsOperator, "setup: still in flight");
        if report_b.all_final() || report_b.held_elsewhere.len() != 1 {
            lies.push(format!(
                "{place:?}: B reported all_final={} with held_elsewhere {:?} while A was settling \
                 the entry",
                report_b.all_final(),
                report_b.held_elsewhere
            ));
        }
        b.close().await;
    }
    tell(lies);
}

/// With the person's word given, a needs-operator entry past the deadline is examined and left
/// as it is: the report is not `all_final()`, since the entry still waits for an operator.
#[tokio::test]
async fn a_retry_that_leaves_an_entry_for_the_operator_is_not_all_final() {
    let mut lies = Vec::new();
    for place in places("operator-overdue").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let mine = t.client().prepare_send(cash_send(35)).expect("prepare");
        let key = mine.request_id().to_string();
        sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
        assert!(t.send(&mine).await.expect_err("dropped").outcome_unknown());
        let clients = Clients::new().transfer(transfer(&sb, 0));
        let report = journal
            .recover(&clients, &Recovery::new().deadline(Duration::ZERO))
            .await
            .expect("recover");
        assert_eq!(report.needs_operator, 1, "setup: {report:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let before = sb.requests().len();
        let report = journal
            .recover(
                &clients,
                &Recovery::new()
                    .retry_needs_operator(true)
                    .deadline(Duration::from_millis(1)),
            )
            .await
            .expect("recover");
        assert_eq!(sb.requests().len(), before, "nothing sent (right)");
        assert_eq!(
            state_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await,
            State::NeedsOperator
        );
        assert_eq!(report.examined, 1, "{report:?}");
        if report.all_final() {
            lies.push(format!(
                "{place:?}: all_final() while the entry it examined still waits for the operator: {report:?}"
            ));
        }
        journal.close().await;
    }
    tell(lies);
}

/// Held up: a top-up pay applied, its reply lost, sent to the operator; the retry replays it
/// (retrieved), one payment, the journal accepted. And a transfer send whose status read is
/// answered by a proxy's page stays unsettled, nothing sent.
#[tokio::test]
async fn retried_pay_replays_and_a_page_on_the_status_read_sends_nothing() {
    for place in places("operator-pay").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let tp = journal.topup(topup(&sb, 0));
        let offer = tp
            .client()
            .fetch_options(
                whish_intl_topup::ProviderId::new("etisalat-ae"),
                "+971501234567",
            )
            .await
            .expect("options");
        let prepared = tp
            .client()
            .prepare_pay(&offer.options()[0])
            .expect("prepare");
        sb.inject(Endpoint::TopupPay, Fault::DropReply, 1);
        assert!(tp.pay(&prepared).await.expect_err("lost").outcome_unknown());
        assert_eq!(sb.sales().len(), 1, "setup: applied");

        let t = journal.transfer(transfer(&sb, 0));
        let mine = t.client().prepare_send(cash_send(40)).expect("prepare");
        let id = mine.request_id();
        sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
        assert!(t.send(&mine).await.expect_err("dropped").outcome_unknown());

        let clients = Clients::new()
            .transfer(transfer(&sb, 0))
            .topup(topup(&sb, 0));
        let report = journal
            .recover(&clients, &Recovery::new().deadline(Duration::ZERO))
            .await
            .expect("recover");
        assert_eq!(report.needs_operator, 2, "setup: {report:?}");

        sb.inject(Endpoint::TransferStatus, Fault::Page(502), 1);
        let report = journal
            .recover(&clients, &Recovery::new().retry_needs_operator(true))
            .await
            .expect("recover");
        assert_eq!(sb.sales().len(), 1, "paid once");
        let pay = support::entry_of(
            &journal,
            Service::IntlTopup,
            Operation::Pay,
            prepared.external_id().as_str(),
        )
        .await;
        assert_eq!(pay.state, State::Accepted);
        assert_eq!(
            transfers_with(&sb, id.get()),
            0,
            "the transfer was not sent"
        );
        let send = state_of(
            &journal,
            Service::MoneyTransfer,
            Operation::Send,
            &id.to_string(),
        )
        .await;
        assert_ne!(send, State::Accepted);
        assert!(!report.all_final(), "{report:?}");
        journal.close().await;
    }
}

/// Held up: a status read that lies "never received" (`sending.transfer.invalid.info`) for a
/// transfer the service applied (its reply lost): the resend meets `transfer.already.done`, the
/// real status read and the activity log confirm it. One transfer, accepted. Then a retry killed
/// after its resend was applied (the future dropped while the service stalls): the next retry,
/// once the lease has run out, reads it by status and confirms it. One transfer.
#[tokio::test]
async fn a_lying_status_read_or_a_killed_retry_never_sends_a_transfer_twice() {
    for place in places("operator-lying-status").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let (killed, applied) = lost_and_applied_for_the_operator(&sb, &journal, 46, 45).await;
        let clients = Clients::new().transfer(transfer(&sb, 0));
        journal.close().await;

        // The first status read lies; the second entry's resend is applied and stalls; the
        // retrying process dies then (its future dropped).
        sb.inject(
            Endpoint::TransferStatus,
            Fault::Code("sending.transfer.invalid.info"),
            1,
        );
        sb.inject(Endpoint::TransferSend, Fault::Delay(Duration::ZERO), 1);
        sb.inject(Endpoint::TransferSend, Fault::Stall, 1);
        let dying = place.open().await;
        let c2 = clients.clone();
        let task = tokio::spawn(async move {
            dying
                .recover(&c2, &Recovery::new().retry_needs_operator(true))
                .await
        });
        let started = std::time::Instant::now();
        while transfers_with(&sb, killed.request_id().get()) == 0
            && started.elapsed() < Duration::from_secs(10)
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        task.abort();
        let _ = task.await;
        assert_eq!(
            transfers_with(&sb, killed.request_id().get()),
            1,
            "setup: applied"
        );
        tokio::time::sleep(support::LEASE * 3).await;

        let journal = place.open().await;
        let report = journal
            .recover(&clients, &Recovery::new().retry_needs_operator(true))
            .await
            .expect("recover");
        for p in [&applied, &killed] {
            assert_eq!(
                transfers_with(&sb, p.request_id().get()),
                1,
                "{place:?}: once"
            );
            assert_eq!(
                state_of(
                    &journal,
                    Service::MoneyTransfer,
                    Operation::Send,
                    &p.request_id().to_string()
                )
                .await,
                State::Accepted,
                "{place:?}: {report:?}"
            );
        }
        assert!(report.all_final(), "{report:?}");
        journal.close().await;
    }
}

/// Held up: cancels waiting for the operator are decided by the transfer's status: one applied
/// with its reply lost is confirmed without a second cancel; one that never arrived is sent,
/// once; one whose transfer was collected meanwhile is refused. Exactly one cancel reaches the
/// service for the never-arrived one, none for the others.
#[tokio::test]
async fn needs_operator_cancels_are_decided_by_status() {
    for place in places("operator-cancels").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let mut ltns = Vec::new();
        for n in 0..3 {
            let sent = t
                .send(&t.client().prepare_send(cash_send(50 + n)).expect("prepare"))
                .await
                .expect("sent");
            ltns.push(sent.ltn_number().expect("ltn").to_owned());
        }
        let cancels: Vec<_> = ltns
            .iter()
            .map(|l| t.client().prepare_cancel(l, None).expect("prepare"))
            .collect();
        sb.inject(Endpoint::TransferCancel, Fault::DropReply, 1);
        assert!(
            t.cancel(&cancels[0])
                .await
                .expect_err("lost")
                .outcome_unknown()
        );
        sb.inject(Endpoint::TransferCancel, Fault::DropRequest, 1);
        assert!(
            t.cancel(&cancels[1])
                .await
                .expect_err("dropped")
                .outcome_unknown()
        );
        sb.inject(Endpoint::TransferCancel, Fault::DropRequest, 1);
        assert!(
            t.cancel(&cancels[2])
                .await
                .expect_err("dropped")
                .outcome_unknown()
        );
        sb.collect_cash(&ltns[2]).await.expect("collected");
        let clients = Clients::new().transfer(transfer(&sb, 0));
        let report = journal
            .recover(&clients, &Recovery::new().deadline(Duration::ZERO))
            .await
            .expect("recover");
        assert_eq!(report.needs_operator, 3, "setup: {report:?}");
        let wire_before = sb
            .requests()
            .iter()
            .filter(|r| r.endpoint == Endpoint::TransferCancel)
            .count();
        let report = journal
            .recover(&clients, &Recovery::new().retry_needs_operator(true))
            .await
            .expect("recover");
        let wire = sb
            .requests()
            .iter()
            .filter(|r| r.endpoint == Endpoint::TransferCancel)
            .count()
            - wire_before;
        assert_eq!(
            wire, 1,
            "{place:?}: only the cancel that never arrived is sent"
        );
        let statuses: Vec<String> = ltns
            .iter()
            .map(|l| {
                sb.transfers()
                    .into_iter()
                    .find(|x| &x.ltn_number == l)
                    .expect("t")
                    .status
            })
            .collect();
        assert_eq!(statuses, ["CANCELED_FULL", "CANCELED_FULL", "RECEIVED"]);
        let states = {
            let mut v = Vec::new();
            for c in &cancels {
                v.push(
                    state_of(
                        &journal,
                        Service::MoneyTransfer,
                        Operation::Cancel,
                        &c.request_id().to_string(),
                    )
                    .await,
                );
            }
            v
        };
        assert_eq!(
            states,
            [State::Accepted, State::Accepted, State::Refused],
            "{place:?}: {report:?}"
        );
        assert!(report.all_final(), "{report:?}");
        journal.close().await;
    }
}

/// A send of `dollars` that never arrived (left open), its `column` then spoiled by hand, and a
/// recovery that sends it to the operator as unreadable, sending nothing: the sandbox, the
/// journal, the send's Request-id and the clients.
async fn quarantined_send(
    place: &support::Place,
    dollars: i64,
    column: &str,
) -> (
    whish_sandbox::Sandbox,
    whish_journal::Journal,
    whish_core::RequestId,
    Clients,
) {
    let sb = sandbox().await;
    let journal = place.open().await;
    let t = journal.transfer(transfer(&sb, 0));
    let mine = t
        .client()
        .prepare_send(cash_send(dollars))
        .expect("prepare");
    let id = mine.request_id();
    sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
    assert!(t.send(&mine).await.expect_err("dropped").outcome_unknown());
    journal.flush().await;
    let spoiled = journal_sql(
        place,
        &format!(
            "UPDATE whish_journal_entries SET {column} = '{{not json' WHERE idem_key = '{id}'"
        ),
    )
    .await;
    assert_eq!(spoiled, 1, "setup");
    let clients = Clients::new().transfer(transfer(&sb, 0));
    let report = journal
        .recover(&clients, &Recovery::new())
        .await
        .expect("recover");
    assert_eq!(report.unreadable.len(), 1, "setup: {report:?}");
    assert_eq!(transfers_with(&sb, id.get()), 0, "setup: nothing sent");
    (sb, journal, id, clients)
}

/// A row that could not be read (its outcome column spoiled) goes to the operator, "nothing was
/// sent for it". Recovery's own quarantine then writes a fresh outcome over the spoiled column,
/// so the row reads again; the person's `retry_needs_operator` then sends it. The docs: "one
/// whose row cannot be read stays waiting for the operator".
#[tokio::test]
async fn an_entry_quarantined_as_unreadable_is_not_sent_by_a_retry() {
    let mut found = Vec::new();
    for place in places("operator-unreadable").await {
        let (sb, journal, id, clients) = quarantined_send(&place, 55, "outcome").await;
        let report = journal
            .recover(&clients, &Recovery::new().retry_needs_operator(true))
            .await
            .expect("recover");
        if transfers_with(&sb, id.get()) != 0 {
            found.push(format!(
                "{place:?}: the unreadable entry was sent by the retry: {report:?}"
            ));
        }
        journal.close().await;
    }
    tell(found);
}

/// Held up: a row whose references column is spoiled stays unreadable after its quarantine
/// (the quarantine rewrites only the outcome), and the retry sends nothing for it.
#[tokio::test]
async fn an_entry_with_spoiled_references_stays_unsent_by_a_retry() {
    for place in places("operator-unreadable-refs").await {
        let (sb, journal, id, clients) = quarantined_send(&place, 56, "refs").await;
        let report = journal
            .recover(&clients, &Recovery::new().retry_needs_operator(true))
            .await
            .expect("recover");
        assert_eq!(transfers_with(&sb, id.get()), 0, "{place:?}: {report:?}");
        assert_eq!(report.unreadable.len(), 1, "{report:?}");
        assert!(!report.all_final(), "{report:?}");
        journal.close().await;
    }
}

/// Held up: two processes retry twelve needs-operator sends at once (half never arrived, half
/// applied with their reply lost, every call slowed a little): each entry worked by one of
/// them, one transfer per Request-id, only the six that never arrived sent, all accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_retrying_at_once_send_each_transfer_once() {
    for place in places("operator-two-retries").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let mut ids = Vec::new();
        for n in 0..12 {
            let p = t.client().prepare_send(cash_send(60 + n)).expect("prepare");
            let fault = if n % 2 == 0 {
                Fault::DropRequest
            } else {
                Fault::DropReply
            };
            sb.inject(Endpoint::TransferSend, fault, 1);
            assert!(t.send(&p).await.expect_err("lost").outcome_unknown());
            ids.push(p.request_id());
        }
        let clients = Clients::new().transfer(transfer(&sb, 0));
        let report = journal
            .recover(&clients, &Recovery::new().deadline(Duration::ZERO))
            .await
            .expect("recover");
        assert_eq!(report.needs_operator, 12, "setup: {report:?}");
        journal.close().await;
        sb.inject(
            Endpoint::TransferStatus,
            Fault::Delay(Duration::from_millis(60)),
            24,
        );
        let before = sb
            .requests()
            .iter()
            .filter(|r| r.endpoint == Endpoint::TransferSend)
            .count();
        // Exclusive claims are the subject, not leases running out under load.
        let (a, b) = (place.open_steady().await, place.open_steady().await);
        let (ca, cb) = (clients.clone(), clients.clone());
        let ta = tokio::spawn(async move {
            let r = a
                .recover(&ca, &Recovery::new().retry_needs_operator(true).batch(2))
                .await
                .expect("A");
            a.close().await;
            r
        });
        let tb = tokio::spawn(async move {
            let r = b
                .recover(&cb, &Recovery::new().retry_needs_operator(true).batch(2))
                .await
                .expect("B");
            b.close().await;
            r
        });
        let (ra, rb) = (ta.await.expect("join"), tb.await.expect("join"));
        let sends = sb
            .requests()
            .iter()
            .filter(|r| r.endpoint == Endpoint::TransferSend)
            .count()
            - before;
        assert_eq!(sends, 6, "{place:?}: A {ra:?} B {rb:?}");
        let journal = place.open().await;
        for id in &ids {
            assert_eq!(transfers_with(&sb, id.get()), 1, "{place:?}");
            assert_eq!(
                state_of(
                    &journal,
                    Service::MoneyTransfer,
                    Operation::Send,
                    &id.to_string()
                )
                .await,
                State::Accepted,
                "{place:?}: A {ra:?} B {rb:?}"
            );
        }
        journal.close().await;
    }
}
