//! The inbox: a reported change is recorded once whatever the redeliveries, handed on under a
//! lease, kept waiting with its error when a handler fails, taken again when its worker dies,
//! and handed to a person past its deadline. On SQLite and PostgreSQL.

use std::time::Duration;

use whish_journal::{Journal, Recorded, Service, State};

use crate::support::{Place, places};

const LEASE: Duration = Duration::from_millis(400);

async fn worker(place: &Place) -> Journal {
    Journal::builder(place.url())
        .lease(LEASE)
        .open()
        .await
        .expect("open")
}

#[tokio::test]
async fn a_change_is_recorded_once_and_handed_on_once() {
    for place in places("inbox_once").await {
        let receiver = worker(&place).await;
        // Opened first: an open inside the lease or the backoff would eat into it.
        let other = worker(&place).await;
        let body = br#"{"transferId":"7","status":"PAID"}"#;
        let Recorded::New(taken) = receiver
            .record_change(Service::MoneyTransfer, "transfer:7:PAID", body)
            .await
            .expect("record")
        else {
            panic!("{place:?}: the first delivery is new");
        };
        assert_eq!(taken.change.body, body.to_vec());
        assert_eq!(taken.change.state, State::Waiting);
        // A redelivery, while the first is being handed on: recorded already, nothing to do.
        let again = receiver
            .record_change(Service::MoneyTransfer, "transfer:7:PAID", body)
            .await
            .expect("record again");
        assert!(matches!(again, Recorded::Before), "{place:?}: {again:?}");
        // Another worker cannot take it while its lease is live.
        assert!(
            other
                .take_changes(10, false)
                .await
                .expect("take")
                .is_empty()
        );
        assert!(receiver.handed_on(&taken).await.expect("hand on"));
        tokio::time::sleep(LEASE * 2).await;
        assert!(
            other
                .take_changes(10, false)
                .await
                .expect("take")
                .is_empty(),
            "{place:?}: a change handed on is never taken again"
        );
        let again = receiver
            .record_change(Service::MoneyTransfer, "transfer:7:PAID", body)
            .await
            .expect("record after");
        assert!(matches!(again, Recorded::Before), "{place:?}: {again:?}");
        receiver.close().await;
        other.close().await;
    }
}

#[tokio::test]
async fn a_failed_handler_leaves_the_change_waiting_with_its_error() {
    for place in places("inbox_failed").await {
        let receiver = worker(&place).await;
        // Opened first: an open inside the lease or the backoff would eat into it.
        let other = worker(&place).await;
        let Recorded::New(taken) = receiver
            .record_change(Service::HostedCollect, "collect:order-1:success", b"q=1")
            .await
            .expect("record")
        else {
            panic!("new");
        };
        assert!(
            receiver
                .hand_on_failed(
                    &taken,
                    "the status read answered 503",
                    Duration::from_millis(400),
                    Duration::from_secs(3600)
                )
                .await
                .expect("failed")
        );
        // Not before the backoff: then the next worker takes it, with the error and one more
        // attempt.
        assert!(
            other
                .take_changes(10, false)
                .await
                .expect("take")
                .is_empty(),
            "{place:?}: taken inside the backoff"
        );
        tokio::time::sleep(Duration::from_millis(600)).await;
        let again = other.take_changes(10, false).await.expect("take");
        assert_eq!(again.len(), 1, "{place:?}");
        assert_eq!(again[0].change.key, "collect:order-1:success");
        assert_eq!(again[0].change.body, b"q=1".to_vec());
        assert_eq!(again[0].change.attempts, 2);
        assert_eq!(
            again[0].change.last_error.as_deref(),
            Some("the status read answered 503")
        );
        // The first worker's lease is gone: its late word changes nothing.
        assert!(!receiver.handed_on(&taken).await.expect("stale"));
        assert!(other.handed_on(&again[0]).await.expect("hand on"));
        receiver.close().await;
        other.close().await;
    }
}

#[tokio::test]
async fn a_dead_workers_change_is_taken_again_when_its_lease_runs_out() {
    for place in places("inbox_dead").await {
        let receiver = worker(&place).await;
        // Opened first: an open inside the lease or the backoff would eat into it.
        let other = worker(&place).await;
        let Recorded::New(_dies) = receiver
            .record_change(Service::MoneyTransfer, "transfer:8:PAID", b"{}")
            .await
            .expect("record")
        else {
            panic!("new");
        };
        // The receiver stops renewing (it died in the handler).
        assert!(
            other
                .take_changes(10, false)
                .await
                .expect("take")
                .is_empty()
        );
        tokio::time::sleep(LEASE + Duration::from_millis(200)).await;
        let taken = other.take_changes(10, false).await.expect("take");
        assert_eq!(taken.len(), 1, "{place:?}: taken once the lease ran out");
        assert!(other.handed_on(&taken[0]).await.expect("hand on"));
        receiver.close().await;
        other.close().await;
    }
}

#[tokio::test]
async fn a_change_failing_past_its_deadline_waits_for_a_person() {
    for place in places("inbox_deadline").await {
        let receiver = worker(&place).await;
        let Recorded::New(taken) = receiver
            .record_change(Service::MoneyTransfer, "transfer:9:PAID", b"{}")
            .await
            .expect("record")
        else {
            panic!("new");
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            receiver
                .hand_on_failed(
                    &taken,
                    "the handler panicked",
                    Duration::ZERO,
                    Duration::from_millis(1)
                )
                .await
                .expect("failed")
        );
        assert!(
            receiver
                .take_changes(10, false)
                .await
                .expect("take")
                .is_empty()
        );
        let listed = receiver
            .entries(
                Service::MoneyTransfer,
                whish_journal::Operation::Callback,
                &["transfer:9:PAID"],
            )
            .await
            .expect("entries");
        assert_eq!(listed[0].state, State::Escalated, "{place:?}");
        // A person's word: taken again.
        let again = receiver.take_changes(10, true).await.expect("take");
        assert_eq!(again.len(), 1, "{place:?}");
        assert_eq!(again[0].change.state, State::Escalated);
        assert!(
            receiver
                .hand_on_failed(
                    &again[0],
                    "still down",
                    Duration::ZERO,
                    Duration::from_millis(1)
                )
                .await
                .expect("failed")
        );
        // Or, from another process (the command), put back for any worker: waiting, free.
        let person = worker(&place).await;
        assert!(
            person
                .hand_on_again(Service::MoneyTransfer, "transfer:9:PAID")
                .await
                .expect("again")
        );
        let change = person
            .change(Service::MoneyTransfer, "transfer:9:PAID")
            .await
            .expect("read")
            .expect("there");
        assert_eq!(change.state, State::Waiting, "{place:?}");
        assert_eq!(
            change.last_error.as_deref(),
            Some("a person asked to hand it on again")
        );
        let taken = receiver.take_changes(10, false).await.expect("take");
        assert_eq!(taken.len(), 1, "{place:?}: any worker takes it now");
        assert!(receiver.handed_on(&taken[0]).await.expect("hand on"));
        assert!(
            !person
                .hand_on_again(Service::MoneyTransfer, "transfer:9:PAID")
                .await
                .expect("again"),
            "{place:?}: handed on is final"
        );
        receiver.close().await;
        person.close().await;
    }
}

/// An inbox worker never takes a request waiting for the operator, and recovery never claims a
/// change waiting for a person: each has its own states, even on a person's word.
#[tokio::test]
async fn the_inbox_and_recovery_never_take_each_others_entries() {
    use whish_journal::{Clients, Recovery};
    for place in places("inbox_apart").await {
        let sb = crate::support::sandbox().await;
        let journal = worker(&place).await;
        let (lost, applied) =
            crate::support::lost_and_applied_for_the_operator(&sb, &journal, 31, 32).await;
        let Recorded::New(taken) = journal
            .record_change(Service::MoneyTransfer, "transfer:10:PAID", b"{}")
            .await
            .expect("record")
        else {
            panic!("new");
        };
        // Past a deadline of zero means recorded at least a millisecond ago.
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            journal
                .hand_on_failed(&taken, "the handler failed", Duration::ZERO, Duration::ZERO)
                .await
                .expect("failed")
        );
        // A person's word on the inbox: the escalated change only, never the two sends.
        let taken = journal.take_changes(10, true).await.expect("take");
        let keys: Vec<&str> = taken.iter().map(|t| t.change.key.as_str()).collect();
        assert_eq!(keys, ["transfer:10:PAID"], "{place:?}");
        for t in &taken {
            assert!(
                journal
                    .hand_on_failed(t, "again", Duration::ZERO, Duration::ZERO)
                    .await
                    .expect("back")
            );
        }
        // A person's word on recovery: the two sends only, never the change.
        let report = journal
            .recover(
                &Clients::new().transfer(crate::support::transfer(&sb, 0)),
                &Recovery::new().retry_needs_operator(true),
            )
            .await
            .expect("recover");
        assert_eq!(report.examined, 2, "{place:?}: {report:?}");
        assert!(report.other_service.is_empty(), "{place:?}: {report:?}");
        let sends = journal
            .entries(
                Service::MoneyTransfer,
                whish_journal::Operation::Send,
                &[
                    &lost.request_id().to_string(),
                    &applied.request_id().to_string(),
                ],
            )
            .await
            .expect("entries");
        assert!(
            sends.iter().all(|e| e.state == State::Accepted),
            "{place:?}: {sends:?}"
        );
        let change = journal
            .entries(
                Service::MoneyTransfer,
                whish_journal::Operation::Callback,
                &["transfer:10:PAID"],
            )
            .await
            .expect("entries");
        assert_eq!(change[0].state, State::Escalated, "{place:?}");
        journal.close().await;
    }
}
