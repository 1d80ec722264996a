//! `Journal::abandon`, a person's decision not to send an entry waiting for the operator, racing
//! with recoveries, sends, take-overs, dropped calls and lagging reads. Each test asserts what a
//! careful payment engineer expects against what the sandbox holds, on SQLite and (with
//! WHISH_TEST_POSTGRES_URL) on PostgreSQL.

use std::time::Duration;

use crate::support::{
    abandon_send, calls, cash_send, entry_of, journal_sql, lost_and_applied_for_the_operator,
    places, sandbox, transfer, transfers_with, until_calls,
};
use whish_journal::{ABANDONED, Abandoned, Clients, Journal, Operation, Recovery, Service, State};
use whish_sandbox::{Endpoint, Fault};

/// The lies found, one for each place (SQLite, PostgreSQL), all told at the end.
fn tell(lies: Vec<String>) {
    assert!(lies.is_empty(), "{}", lies.join("\n"));
}

async fn state_of(j: &Journal, o: Operation, key: &str) -> State {
    entry_of(j, Service::MoneyTransfer, o, key).await.state
}

/// Abandon never trusts one status read. The service holds the transfer (applied, its reply
/// lost), and its status read lags once: `sending.transfer.invalid.info` (the fault the SDK's
/// own recovery is proven against). The activity log lists the transfer under the Request-id:
/// not abandoned. With the log unreadable too (a proxy's page), nothing is known: not abandoned
/// either.
#[tokio::test]
async fn a_lagging_status_read_does_not_abandon_a_transfer_the_service_holds() {
    let mut lies = Vec::new();
    for place in places("abandon-lagging-status").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let (_, applied) = lost_and_applied_for_the_operator(&sb, &journal, 40, 41).await;
        let key = applied.request_id().to_string();
        let clients = Clients::new().transfer(transfer(&sb, 0));
        sb.inject(
            Endpoint::TransferStatus,
            Fault::Code("sending.transfer.invalid.info"),
            1,
        );
        let done = abandon_send(&journal, &clients, &key, "not wanted").await;
        let state = state_of(&journal, Operation::Send, &key).await;
        assert_eq!(
            transfers_with(&sb, applied.request_id().get()),
            1,
            "the truth: the service holds it"
        );
        if matches!(done, Abandoned::Recorded { .. }) || state == State::Refused {
            lies.push(format!(
                "{place:?}: abandon answered {done:?} and the journal says {state} (abandoned), \
                 while the service holds a transfer under Request-id {key}"
            ));
        }
        sb.inject(
            Endpoint::TransferStatus,
            Fault::Code("sending.transfer.invalid.info"),
            1,
        );
        sb.inject(Endpoint::TransferActivity, Fault::Page(502), 4);
        let done = abandon_send(&journal, &clients, &key, "x").await;
        let state = state_of(&journal, Operation::Send, &key).await;
        if !matches!(done, Abandoned::NoAnswer { .. }) || state != State::NeedsOperator {
            lies.push(format!(
                "{place:?}: with the log unreadable, abandon answered {done:?}, the journal says \
                 {state}, while the service holds a transfer under Request-id {key}"
            ));
        }
        journal.close().await;
    }
    tell(lies);
}

/// A send that never arrived, and someone
/// else's 70 USD transfer under the same Request-id (the collision the SDK's recovery guards
/// against with the activity log). Abandon answers `Received` ("the service received it ... cancel
/// the transfer if it must not be paid"; the CLI prints that advice), though the service never
/// received this 25 USD request: a person following the answer cancels someone else's transfer. The
/// activity log shows another amount; abandon never reads it.
#[tokio::test]
async fn someone_elses_transfer_under_the_request_id_is_not_told_as_received() {
    let mut lies = Vec::new();
    for place in places("abandon-someone-else").await {
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
        let clients = Clients::new().transfer(transfer(&sb, 0));
        let report = journal
            .recover(&clients, &Recovery::new().deadline(Duration::ZERO))
            .await
            .expect("recover");
        assert_eq!(report.needs_operator, 1, "setup: {report:?}");

        let done = abandon_send(&journal, &clients, &key, "not wanted").await;
        assert_eq!(
            calls(&sb, Endpoint::TransferCancel),
            0,
            "abandon sends nothing"
        );
        let told_received = match &done {
            Abandoned::Received { status } => {
                !(status.contains("another amount") || status.contains("someone else"))
            }
            _ => false,
        };
        if told_received {
            lies.push(format!(
                "{place:?}: abandon answered {done:?}: that the service received this 25 USD \
                 send, while the transfer under its Request-id is someone else's 70 USD one"
            ));
        }
        journal.close().await;
    }
    tell(lies);
}

/// Held up: abandon holds the entry while its status read is slow; a retrying recovery of
/// another process meanwhile neither sends it nor calls the journal final (it lists the entry
/// held elsewhere). The entry is abandoned, nothing sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retrying_recovery_during_the_check_sends_nothing() {
    for place in places("abandon-race-abandon-first").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let (lost, _) = lost_and_applied_for_the_operator(&sb, &journal, 42, 43).await;
        let key = lost.request_id().to_string();
        let clients = Clients::new().transfer(transfer(&sb, 0));
        journal.close().await;
        let sends = calls(&sb, Endpoint::TransferSend);
        let statuses = calls(&sb, Endpoint::TransferStatus);
        sb.inject(
            Endpoint::TransferStatus,
            Fault::Delay(Duration::from_millis(800)),
            1,
        );
        // The holder's lease outlasts its slow read on any machine: no takeover is tested.
        let a = place.open_steady().await;
        let (ac, akey) = (clients.clone(), key.clone());
        let abandoning = tokio::spawn(async move {
            let done = abandon_send(&a, &ac, &akey, "no").await;
            a.close().await;
            done
        });
        until_calls(&sb, Endpoint::TransferStatus, statuses + 1).await;
        let b = place.open().await;
        let report = b
            .recover(&clients, &Recovery::new().retry_needs_operator(true))
            .await
            .expect("recover");
        let done = abandoning.await.expect("join");
        assert!(matches!(done, Abandoned::Recorded { .. }), "{done:?}");
        assert!(!report.all_final(), "{place:?}: {report:?}");
        assert_eq!(
            calls(&sb, Endpoint::TransferSend),
            sends,
            "{place:?}: {report:?}"
        );
        assert_eq!(transfers_with(&sb, lost.request_id().get()), 0);
        let entry = entry_of(&b, Service::MoneyTransfer, Operation::Send, &key).await;
        assert_eq!(entry.state, State::Refused);
        assert_eq!(entry.outcome.expect("outcome").result, ABANDONED);
        b.close().await;
    }
}

/// Held up: a retrying recovery holds the entry (its status read slow) and sends it; abandon
/// meanwhile closes nothing. The entry ends accepted, one transfer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandon_during_a_retrying_recovery_closes_nothing() {
    for place in places("abandon-race-recovery-first").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let (lost, _) = lost_and_applied_for_the_operator(&sb, &journal, 44, 45).await;
        let key = lost.request_id().to_string();
        let clients = Clients::new().transfer(transfer(&sb, 0));
        journal.close().await;
        let statuses = calls(&sb, Endpoint::TransferStatus);
        sb.inject(
            Endpoint::TransferStatus,
            Fault::Delay(Duration::from_millis(800)),
            1,
        );
        // The holder's lease outlasts its slow read on any machine: no takeover is tested.
        let b = place.open_steady().await;
        let bc = clients.clone();
        let recovering = tokio::spawn(async move {
            let r = b
                .recover(&bc, &Recovery::new().retry_needs_operator(true))
                .await
                .expect("recover");
            b.close().await;
            r
        });
        until_calls(&sb, Endpoint::TransferStatus, statuses + 1).await;
        let a = place.open().await;
        let done = abandon_send(&a, &clients, &key, "no").await;
        let report = recovering.await.expect("join");
        assert!(!matches!(done, Abandoned::Recorded { .. }), "{done:?}");
        assert_eq!(
            transfers_with(&sb, lost.request_id().get()),
            1,
            "{report:?}"
        );
        assert_eq!(state_of(&a, Operation::Send, &key).await, State::Accepted);
        a.close().await;
    }
}

/// Held up: recovery told to take over (`--take-over`) takes the entry from under a slow
/// abandon, reads it never received and sends it. Abandon's final write is fenced by the
/// lease's token: it records nothing and says another process took the entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_take_over_during_the_check_wins_and_abandon_records_nothing() {
    for place in places("abandon-take-over").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let (lost, _) = lost_and_applied_for_the_operator(&sb, &journal, 46, 47).await;
        let key = lost.request_id().to_string();
        let clients = Clients::new().transfer(transfer(&sb, 0));
        journal.close().await;
        let statuses = calls(&sb, Endpoint::TransferStatus);
        sb.inject(
            Endpoint::TransferStatus,
            Fault::Delay(Duration::from_millis(700)),
            1,
        );
        let a = place.open().await;
        let (ac, akey) = (clients.clone(), key.clone());
        let abandoning = tokio::spawn(async move {
            let done = abandon_send(&a, &ac, &akey, "no").await;
            a.close().await;
            done
        });
        until_calls(&sb, Endpoint::TransferStatus, statuses + 1).await;
        let b = place.open().await;
        let report = b
            .recover(
                &clients,
                &Recovery::new().retry_needs_operator(true).take_over(true),
            )
            .await
            .expect("recover");
        let done = abandoning.await.expect("join");
        assert_eq!(
            transfers_with(&sb, lost.request_id().get()),
            1,
            "{report:?}"
        );
        assert!(
            matches!(&done, Abandoned::Unchecked { why } if why.contains("another process")),
            "{place:?}: {done:?}"
        );
        assert_eq!(state_of(&b, Operation::Send, &key).await, State::Accepted);
        b.close().await;
    }
}

/// Held up: a journaled send of the same request, by the same process, while abandon holds
/// the entry (the journal lets its own owner take a lease it holds). Whatever the order, the
/// journal never says abandoned for a transfer that went out: either the send went and the
/// entry is accepted (abandon records nothing), or the entry is abandoned and nothing went.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_of_the_same_request_during_the_check_is_never_both() {
    for place in places("abandon-send-during").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let (lost, _) = lost_and_applied_for_the_operator(&sb, &journal, 48, 49).await;
        let key = lost.request_id().to_string();
        let clients = Clients::new().transfer(transfer(&sb, 0));
        let statuses = calls(&sb, Endpoint::TransferStatus);
        sb.inject(
            Endpoint::TransferStatus,
            Fault::Delay(Duration::from_millis(700)),
            1,
        );
        let a = journal.clone();
        let (ac, akey) = (clients.clone(), key.clone());
        let abandoning = tokio::spawn(async move { abandon_send(&a, &ac, &akey, "no").await });
        until_calls(&sb, Endpoint::TransferStatus, statuses + 1).await;
        let t = journal.transfer(transfer(&sb, 0));
        let sent = t.send(&lost).await;
        let done = abandoning.await.expect("join");
        let held = transfers_with(&sb, lost.request_id().get());
        let entry = entry_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await;
        let abandoned = entry.state == State::Refused
            && entry
                .outcome
                .as_ref()
                .is_some_and(|o| o.result == ABANDONED);
        assert!(
            !(held > 0 && (abandoned || matches!(done, Abandoned::Recorded { .. }))),
            "{place:?}: the service holds {held}, the journal {entry:?}, abandon {done:?}, send {sent:?}"
        );
        assert!(held <= 1);
        journal.close().await;
    }
}

/// Held up: abandon's future dropped while its status read stalls (a caller's timeout). The
/// entry is left exactly as it was (waiting for the operator, nothing written), and its lease
/// is given back at once (since the fix for the probe below): another process's retrying
/// recovery then either lists it held (never hidden) or settles it, sent once.
#[tokio::test]
async fn a_dropped_abandon_leaves_the_entry_as_it_was_and_free_after_its_lease() {
    for place in places("abandon-dropped").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let (lost, _) = lost_and_applied_for_the_operator(&sb, &journal, 50, 51).await;
        let key = lost.request_id().to_string();
        let clients = Clients::new().transfer(transfer(&sb, 0));
        let before = entry_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await;
        sb.inject(Endpoint::TransferStatus, Fault::Stall, 1);
        let timed_out = tokio::time::timeout(
            Duration::from_millis(250),
            journal.abandon(&clients, Service::MoneyTransfer, Operation::Send, &key, "x"),
        )
        .await;
        assert!(timed_out.is_err(), "setup: dropped");
        let after = entry_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await;
        assert_eq!(after.state, State::NeedsOperator);
        assert_eq!(after.outcome, before.outcome, "nothing half-written");
        let other = place.open().await;
        let report = other
            .recover(&clients, &Recovery::new().retry_needs_operator(true))
            .await
            .expect("recover");
        let settled = report.changes.iter().any(|c| c.key == key);
        let held = report.held_elsewhere.iter().any(|h| h.key == key);
        assert!(settled || held, "{place:?}: hidden: {report:?}");
        other.close().await;
        if settled {
            assert_eq!(
                state_of(&journal, Operation::Send, &key).await,
                State::Accepted
            );
            assert_eq!(transfers_with(&sb, lost.request_id().get()), 1, "sent once");
        } else {
            assert!(!report.all_final(), "{report:?}");
        }
        journal.close().await;
    }
}

/// The same dropped abandon, and then this
/// process's own retrying recovery (a service that runs `recover` after an abandon timed out). It
/// settles the other entry (the applied one, confirmed) and says `all_final()`; the entry the
/// dropped future still leases is neither worked, nor counted in `needs_operator`, nor listed in
/// `held_elsewhere` (the process's own leases are left out of it), though it still waits for the
/// operator. Another process's recovery lists it (held up in the probe above).
#[tokio::test]
async fn a_dropped_abandon_does_not_hide_the_entry_from_this_processs_recovery() {
    let mut lies = Vec::new();
    for place in places("abandon-dropped-own").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let (lost, _) = lost_and_applied_for_the_operator(&sb, &journal, 52, 53).await;
        let key = lost.request_id().to_string();
        let clients = Clients::new().transfer(transfer(&sb, 0));
        sb.inject(Endpoint::TransferStatus, Fault::Stall, 1);
        let timed_out = tokio::time::timeout(
            Duration::from_millis(150),
            journal.abandon(&clients, Service::MoneyTransfer, Operation::Send, &key, "x"),
        )
        .await;
        assert!(timed_out.is_err(), "setup: dropped");
        let report = journal
            .recover(&clients, &Recovery::new().retry_needs_operator(true))
            .await
            .expect("recover");
        let state = state_of(&journal, Operation::Send, &key).await;
        if state == State::NeedsOperator && report.all_final() {
            lies.push(format!(
                "{place:?}: all_final() while the entry waits for the operator: {report:?}"
            ));
        }
        journal.close().await;
    }
    tell(lies);
}

/// Held up: a cancel whose row was quarantined (unreadable when recovery met it, then
/// rewritten by the quarantine) is not abandoned: the LTN it names is not trusted. A row that
/// still cannot be read is not abandoned either, and nothing is written.
#[tokio::test]
async fn quarantined_and_unreadable_entries_are_not_abandoned() {
    for place in places("abandon-quarantined").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let sent = t
            .send(&t.client().prepare_send(cash_send(54)).expect("prepare"))
            .await
            .expect("sent");
        let cancel = t
            .client()
            .prepare_cancel(sent.ltn_number().expect("ltn"), None)
            .expect("prepare");
        sb.inject(Endpoint::TransferCancel, Fault::DropRequest, 1);
        assert!(t.cancel(&cancel).await.expect_err("lost").outcome_unknown());
        let ckey = cancel.request_id().to_string();
        // A send left open, whose references column is then spoiled (unreadable for good).
        let lost = t.client().prepare_send(cash_send(55)).expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
        assert!(t.send(&lost).await.expect_err("lost").outcome_unknown());
        let skey = lost.request_id().to_string();
        journal.flush().await;
        assert_eq!(
            journal_sql(
                &place,
                &format!(
                    "UPDATE whish_journal_entries SET outcome = '{{not json' WHERE idem_key = '{ckey}'"
                ),
            )
            .await,
            1
        );
        assert_eq!(
            journal_sql(
                &place,
                &format!(
                    "UPDATE whish_journal_entries SET refs = '{{not json' WHERE idem_key = '{skey}'"
                ),
            )
            .await,
            1
        );
        let clients = Clients::new().transfer(transfer(&sb, 0));
        let report = journal
            .recover(&clients, &Recovery::new())
            .await
            .expect("recover");
        assert_eq!(report.unreadable.len(), 2, "setup: {report:?}");
        let cancels = calls(&sb, Endpoint::TransferCancel);

        let done = journal
            .abandon(
                &clients,
                Service::MoneyTransfer,
                Operation::Cancel,
                &ckey,
                "no",
            )
            .await
            .expect("abandon");
        assert!(matches!(done, Abandoned::Unchecked { .. }), "{done:?}");
        assert_eq!(
            state_of(&journal, Operation::Cancel, &ckey).await,
            State::NeedsOperator
        );
        // The unreadable row: an error or Unchecked, never a close.
        let done = journal
            .abandon(
                &clients,
                Service::MoneyTransfer,
                Operation::Send,
                &skey,
                "no",
            )
            .await;
        assert!(
            matches!(
                done,
                Err(_) | Ok(Abandoned::Unchecked { .. } | Abandoned::NotWaiting { .. })
            ),
            "{place:?}: {done:?}"
        );
        let still = journal_sql(
            &place,
            &format!(
                "UPDATE whish_journal_entries SET attempts = attempts WHERE idem_key = '{skey}' \
                 AND state = 'needs-operator' AND lease_owner IS NULL"
            ),
        )
        .await;
        assert_eq!(
            still, 1,
            "{place:?}: left waiting, and its lease given back"
        );
        assert_eq!(calls(&sb, Endpoint::TransferCancel), cancels);
        assert_eq!(transfers_with(&sb, lost.request_id().get()), 0);
        journal.close().await;
    }
}

/// Held up: a cancel's check. A status read by LTN that answers a code (even
/// `sending.transfer.invalid.info`) or a proxy's page closes nothing; a cancel that applied
/// (its reply lost) is `Received`; one whose transfer was collected meanwhile (RECEIVED: the
/// cancel cannot have applied) is closed, and recovery sends no cancel for it afterwards.
#[tokio::test]
async fn a_cancels_check_closes_only_what_cannot_have_applied() {
    for place in places("abandon-cancel").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let mut cancels = Vec::new();
        let mut ltns = Vec::new();
        for (n, fault) in [(0, Fault::DropReply), (1, Fault::DropRequest)] {
            let sent = t
                .send(&t.client().prepare_send(cash_send(56 + n)).expect("prepare"))
                .await
                .expect("sent");
            let ltn = sent.ltn_number().expect("ltn").to_owned();
            let cancel = t.client().prepare_cancel(&ltn, None).expect("prepare");
            sb.inject(Endpoint::TransferCancel, fault, 1);
            assert!(t.cancel(&cancel).await.expect_err("lost").outcome_unknown());
            cancels.push(cancel.request_id().to_string());
            ltns.push(ltn);
        }
        let clients = Clients::new().transfer(transfer(&sb, 0));
        let report = journal
            .recover(&clients, &Recovery::new().deadline(Duration::ZERO))
            .await
            .expect("recover");
        assert_eq!(report.needs_operator, 2, "setup: {report:?}");
        let cancel_calls = calls(&sb, Endpoint::TransferCancel);
        for fault in [
            Fault::Code("sending.transfer.invalid.info"),
            Fault::Page(403),
            Fault::AppliedPage(502),
            Fault::Pending,
        ] {
            for key in &cancels {
                sb.inject(Endpoint::TransferStatus, fault, 1);
                let done = journal
                    .abandon(
                        &clients,
                        Service::MoneyTransfer,
                        Operation::Cancel,
                        key,
                        "x",
                    )
                    .await
                    .expect("abandon");
                assert!(
                    matches!(done, Abandoned::NoAnswer { .. }),
                    "{place:?} {fault:?}: {done:?}"
                );
                assert_eq!(
                    state_of(&journal, Operation::Cancel, key).await,
                    State::NeedsOperator
                );
            }
        }
        let done = journal
            .abandon(
                &clients,
                Service::MoneyTransfer,
                Operation::Cancel,
                &cancels[0],
                "x",
            )
            .await
            .expect("abandon");
        assert!(matches!(done, Abandoned::Received { .. }), "{done:?}");
        sb.collect_cash(&ltns[1]).await.expect("collected");
        let done = journal
            .abandon(
                &clients,
                Service::MoneyTransfer,
                Operation::Cancel,
                &cancels[1],
                "x",
            )
            .await
            .expect("abandon");
        assert!(
            matches!(&done, Abandoned::Recorded { checked } if checked.contains("RECEIVED")),
            "{done:?}"
        );
        let report = journal
            .recover(&clients, &Recovery::new().retry_needs_operator(true))
            .await
            .expect("recover");
        assert_eq!(
            calls(&sb, Endpoint::TransferCancel),
            cancel_calls,
            "{report:?}"
        );
        journal.close().await;
    }
}
