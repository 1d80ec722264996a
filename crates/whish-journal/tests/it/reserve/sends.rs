//! Sends recorded ahead of time (`JournaledTransfer::reserve`): recorded before anything is
//! sent, each sent once; a reservation given back is never sent by recovery and sends later as
//! a first send; one left behind by a process is finished by recovery, once; one whose lease ran
//! out is sent the way the journal decides, never twice; a reservation the journal cannot write
//! records each send on its own. SQLite files and the PostgreSQL server when one is given.

use crate::support::{
    LEASE, cash_send, entry_of, intent_writes_fail, places, sandbox, transfer, transfers_with,
};
use whish_journal::{Clients, Listing, Operation, Recovery, Service, State, Unreserved};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reserved_sends_are_recorded_before_any_is_sent_and_each_goes_once() {
    for place in places("reserve-send").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let prepared: Vec<_> = (0..100)
            .map(|i| t.client().prepare_send(cash_send(10 + i)).expect("prepare"))
            .collect();
        let reserved = t.reserve(prepared).await;
        assert!(reserved.iter().all(|r| r.is_held()));
        // Every one is on record, open, before the first is sent.
        assert_eq!(sb.transfers().len(), 0);
        let open = journal.list(&Listing::new().open()).await.expect("list");
        assert_eq!(open.len(), 100);
        assert!(open.iter().all(|e| e.state == State::Intended));
        let mut tasks = tokio::task::JoinSet::new();
        let mut ids = Vec::new();
        for r in reserved {
            ids.push(r.prepared().request_id());
            let t = t.clone();
            tasks.spawn(async move { t.send_reserved(r).await });
        }
        while let Some(done) = tasks.join_next().await {
            let _ = done.expect("join").expect("accepted");
        }
        for id in &ids {
            assert_eq!(transfers_with(&sb, id.get()), 1, "{id}");
            let e = journal
                .entry(Service::MoneyTransfer, Operation::Send, &id.to_string())
                .await
                .expect("read")
                .expect("recorded");
            assert_eq!(e.state, State::Accepted, "{id}");
            assert_eq!(e.attempts, 1, "sent as a first send: {id}");
        }
        assert!(
            journal
                .list(&Listing::new().open())
                .await
                .expect("list")
                .is_empty()
        );
        journal.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_given_back_is_never_sent_by_recovery_and_sends_later_as_a_first_send() {
    for place in places("reserve-give-back").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let prepared: Vec<_> = (0..5)
            .map(|i| t.client().prepare_send(cash_send(20 + i)).expect("prepare"))
            .collect();
        let kept = prepared.clone();
        for r in t.reserve(prepared).await {
            assert_eq!(
                t.unreserve(r).await.expect("given back"),
                Unreserved::NeverSent
            );
        }
        // A recovery, by this process or another, sends none of them.
        let report = place
            .open()
            .await
            .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
            .await
            .expect("recover");
        assert!(report.changes.is_empty(), "{report:?}");
        assert_eq!(sb.transfers().len(), 0, "nothing sent");
        // A later run sends each as a first send: one transfer each.
        for p in &kept {
            let _ = t.send(p).await.expect("accepted");
            assert_eq!(transfers_with(&sb, p.request_id().get()), 1);
        }
        // Reserved again after they were sent: nothing recorded anew, and a send of it is the
        // journal's ordinary resend (confirmed, still one transfer).
        let again = t.reserve(kept.clone()).await;
        assert!(again.iter().all(|r| !r.is_held()));
        let mut again = again.into_iter();
        let first = again.next().expect("one");
        let _ = t.send_reserved(first).await.expect("confirmed");
        assert_eq!(transfers_with(&sb, kept[0].request_id().get()), 1);
        for r in again {
            assert_eq!(t.unreserve(r).await.expect("ok"), Unreserved::AsBefore);
        }
        journal.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_recorded_unsent_are_never_sent_by_recovery_and_an_entry_already_there_is_left_alone()
 {
    for place in places("record-unsent").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let prepared: Vec<_> = (0..5)
            .map(|i| t.client().prepare_send(cash_send(30 + i)).expect("prepare"))
            .collect();
        // The first was sent before (by an earlier run, or another process).
        let _ = t.send(&prepared[0]).await.expect("accepted");
        let recorded = t
            .record_unsent(&prepared, "not sent: ctrl-c")
            .await
            .expect("recorded");
        assert_eq!(recorded[0], Unreserved::AsBefore);
        assert!(recorded[1..].iter().all(|r| *r == Unreserved::NeverSent));
        let first = journal
            .entry(
                Service::MoneyTransfer,
                Operation::Send,
                &prepared[0].request_id().to_string(),
            )
            .await
            .expect("read")
            .expect("recorded");
        assert_eq!(first.state, State::Accepted, "left as it was");
        for p in &prepared[1..] {
            let e = journal
                .entry(
                    Service::MoneyTransfer,
                    Operation::Send,
                    &p.request_id().to_string(),
                )
                .await
                .expect("read")
                .expect("recorded");
            assert_eq!(e.state, State::Refused);
            let outcome = e.outcome.expect("outcome");
            assert_eq!(outcome.result, "not-sent");
            assert_eq!(outcome.message.as_deref(), Some("not sent: ctrl-c"));
            assert_eq!(e.attempts, 1, "counted as a reservation given back");
        }
        // Nothing is open, and no recovery sends them.
        assert!(
            journal
                .list(&Listing::new().open())
                .await
                .expect("list")
                .is_empty()
        );
        let report = place
            .open()
            .await
            .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
            .await
            .expect("recover");
        assert!(report.changes.is_empty(), "{report:?}");
        assert_eq!(sb.transfers().len(), 1, "only the one sent before");
        // A later send of one is a first send: one transfer, its second attempt on record,
        // recorded as sent when it was sent (a follow-up's cutoff and a reconciliation's
        // window read that time), not when it was recorded as never sent.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let before_send = time::OffsetDateTime::now_utc();
        let _ = t.send(&prepared[1]).await.expect("accepted");
        assert_eq!(transfers_with(&sb, prepared[1].request_id().get()), 1);
        journal.flush().await;
        let e = journal
            .entry(
                Service::MoneyTransfer,
                Operation::Send,
                &prepared[1].request_id().to_string(),
            )
            .await
            .expect("read")
            .expect("recorded");
        assert_eq!((e.state, e.attempts), (State::Accepted, 2));
        assert!(
            e.created >= before_send - time::Duration::milliseconds(5),
            "created {} is the send's time, not the record's (the send began at {before_send})",
            e.created
        );
        journal.close().await;
    }
}

/// A process reserves and dies before sending (its journal dropped, never closed): recovery
/// sends each reserved transfer once; the dead process's handles, sent late, are confirmations,
/// never a second transfer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reservations_left_behind_are_finished_by_recovery_once() {
    for place in places("reserve-left").await {
        let sb = sandbox().await;
        let first = place.open().await;
        let t = first.transfer(transfer(&sb, 0));
        let prepared: Vec<_> = (0..6)
            .map(|i| t.client().prepare_send(cash_send(30 + i)).expect("prepare"))
            .collect();
        let reserved = t.reserve(prepared.clone()).await;
        // Past the lease: another process may take the entries over.
        tokio::time::sleep(LEASE * 2).await;
        let other = place.open().await;
        let report = other
            .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
            .await
            .expect("recover");
        assert_eq!(report.changes.len(), 6, "{report:?}");
        for p in &prepared {
            assert_eq!(transfers_with(&sb, p.request_id().get()), 1);
        }
        // The first process wakes up and sends what it reserved: its lease is gone, so the
        // journal decides from what it holds now (accepted): a confirmed resend, no transfer.
        for r in reserved {
            let id = r.prepared().request_id();
            match t.send_reserved(r).await {
                Ok(_) => {}
                Err(e) => assert!(e.outcome_unknown(), "{id}: {e}"),
            }
            assert_eq!(transfers_with(&sb, id.get()), 1, "{id}");
        }
        assert_eq!(sb.transfers().len(), 6);
        other.close().await;
        first.close().await;
    }
}

/// The reservation's write fails (every insert of an intent raises, as a full disk would):
/// nothing is reserved, nothing is sent while the journal cannot record, and once it can again
/// each send records its transfer on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_the_journal_cannot_write_records_each_send_on_its_own() {
    for place in places("reserve-fails").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        intent_writes_fail(&place, true).await;
        let prepared: Vec<_> = (0..4)
            .map(|i| t.client().prepare_send(cash_send(50 + i)).expect("prepare"))
            .collect();
        let mut reserved = t.reserve(prepared).await;
        assert!(reserved.iter().all(|r| !r.is_held()));
        let last = reserved.pop().expect("four");
        let given_back = reserved.pop().expect("three");
        // Still failing: the send records on its own, fails, and sends nothing.
        let e = t
            .send_reserved(reserved.pop().expect("two"))
            .await
            .expect_err("the intent could not be recorded");
        assert!(e.nothing_sent(), "{e}");
        assert_eq!(sb.transfers().len(), 0);
        intent_writes_fail(&place, false).await;
        // Writable again: the send records and sends, once; a reservation given back is
        // recorded as never sent, and no recovery sends it.
        let id = last.prepared().request_id();
        let _ = t.send_reserved(last).await.expect("accepted");
        assert_eq!(transfers_with(&sb, id.get()), 1);
        assert_eq!(
            t.unreserve(given_back).await.expect("given back"),
            Unreserved::NeverSent
        );
        let report = journal
            .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
            .await
            .expect("recover");
        assert!(report.changes.is_empty(), "{report:?}");
        assert_eq!(sb.transfers().len(), 1);
        let _ = reserved;
        journal.close().await;
    }
}

/// A request recorded as never sent (a batch stopped before it) that is reserved again is
/// recorded afresh: a new entry, open and held, takes its key, so a check reading the sends
/// recorded since a mark taken before it finds it (a reopened old entry it would never read
/// again). Another request under the same key, or one the service refused, stays as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_left_unsent_and_reserved_again_is_recorded_afresh_where_later_checks_read_it() {
    for place in places("reserve-afresh").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let client = transfer(&sb, 0);
        let target = client.target();
        let t = journal.transfer(client);
        let p = t.client().prepare_send(cash_send(41)).expect("prepare");
        let other = t.client().prepare_send(cash_send(42)).expect("prepare");
        let key = p.request_id().to_string();
        let read = async |key: &str| {
            journal
                .entry(Service::MoneyTransfer, Operation::Send, key)
                .await
                .expect("read")
                .expect("recorded")
        };
        t.record_unsent(std::slice::from_ref(&p), "not sent: ctrl-c")
            .await
            .expect("recorded");
        let left = read(&key).await;
        assert!(left.never_left());
        // A check made now: whatever is recorded from here on is read by the next one.
        let mark = journal.sends_mark().await.expect("mark");
        let reserved = t.reserve(vec![p.clone()]).await;
        assert!(reserved[0].is_held(), "held by the reservation");
        let afresh = read(&key).await;
        assert!(
            afresh.id > left.id,
            "a new entry: {} after {}",
            afresh.id,
            left.id
        );
        assert_eq!(afresh.state, State::Intended);
        assert_eq!(afresh.attempts, left.attempts + 1, "its attempts go on");
        let mut seen = Vec::new();
        journal
            .sends_that_may_have_paid_since(&target, mark, |s| seen.push(s.key.to_owned()))
            .await
            .expect("read since");
        assert_eq!(seen, vec![key.clone()], "the next check reads it");
        let _ = t
            .send_reserved(reserved.into_iter().next().expect("one"))
            .await
            .expect("accepted");
        assert_eq!(transfers_with(&sb, p.request_id().get()), 1);
        // The same key holding other bytes, recorded never sent: not this request's entry.
        let other_key = other.request_id().to_string();
        t.record_unsent(std::slice::from_ref(&other), "not sent: ctrl-c")
            .await
            .expect("recorded");
        let before = read(&other_key).await;
        let changed = t
            .client()
            .prepare_send(cash_send(43).request_id(other.request_id()))
            .expect("prepare");
        let again = t.reserve(vec![changed]).await;
        assert!(!again[0].is_held(), "another request's entry is left alone");
        assert_eq!(read(&other_key).await, before);
        journal.close().await;
    }
}

/// A send of what the journal recorded before (`send_recorded`: a batch's row found open) never
/// reopens an entry given back since: nothing is sent, and the entry stays recorded as never
/// sent, for a later reservation to check and record afresh. `send` would reopen it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_of_what_was_recorded_never_reopens_an_entry_given_back_since() {
    for place in places("send-recorded").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let p = t.client().prepare_send(cash_send(51)).expect("prepare");
        // Found open by a batch's read; given back by another run before this send.
        give_back(&t, &p).await;
        let e = t.send_recorded(&p).await.expect_err("not sent");
        assert!(e.nothing_sent(), "{e}");
        assert!(sb.transfers().is_empty(), "nothing sent");
        let entry = entry_of(
            &journal,
            Service::MoneyTransfer,
            Operation::Send,
            &p.request_id().to_string(),
        )
        .await;
        assert!(entry.never_left(), "left as it was: {entry:?}");
        // An entry open as read is resent as send resends it.
        let q = t.client().prepare_send(cash_send(52)).expect("prepare");
        let open = t.reserve(vec![q.clone()]).await;
        assert!(open[0].is_held());
        drop(open);
        let _ = t.send_recorded(&q).await.expect("accepted");
        assert_eq!(transfers_with(&sb, q.request_id().get()), 1);
        journal.close().await;
    }
}

/// A request recorded as never sent whose new reservation fails on a full disk (SQLite
/// refuses the write before any of it is in the log): the old entry stays as it was, never
/// sent, so giving the reservation back says so, not that another process took the entry over.
/// Needs root, to mount a small tmpfs; it says so when it cannot run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_of_a_request_left_unsent_refused_by_a_full_disk_is_given_back_as_never_sent()
{
    let Some(disk) = whish_testkit::tmpfs_for("full_disk", "4m") else {
        return;
    };
    let sb = sandbox().await;
    let url = format!("sqlite:{}", disk.path().join("journal.sqlite").display());
    let journal = whish_journal::Journal::open(&url).await.expect("open");
    let t = journal.transfer(transfer(&sb, 0));
    let p = t.client().prepare_send(cash_send(53)).expect("prepare");
    give_back(&t, &p).await;
    let filler = disk.fill();
    let again = t.reserve(vec![p.clone()]).await;
    assert!(!again[0].is_held(), "the fresh entry could not be written");
    assert_eq!(
        t.unreserve(again.into_iter().next().expect("one"))
            .await
            .expect("given back"),
        Unreserved::NeverSent
    );
    std::fs::remove_file(&filler).expect("room again");
    let entry = entry_of(
        &journal,
        Service::MoneyTransfer,
        Operation::Send,
        &p.request_id().to_string(),
    )
    .await;
    assert!(entry.never_left(), "{entry:?}");
    assert!(sb.transfers().is_empty(), "nothing sent");
    journal.close().await;
}

/// A reservation whose write failed in a way that does not prove it never committed (here a
/// write the database aborts) is not given back as never sent on the strength of the entry it
/// reads: it may yet reappear. Nor is an entry of another request under the key, open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_that_may_have_committed_is_never_given_back_on_what_it_reads() {
    for place in places("reserve-unsure").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let p = t.client().prepare_send(cash_send(56)).expect("prepare");
        give_back(&t, &p).await;
        let q = t.client().prepare_send(cash_send(54)).expect("prepare");
        let open = t.reserve(vec![q.clone()]).await;
        assert!(open[0].is_held());
        intent_writes_fail(&place, true).await;
        let left_unsent = t.reserve(vec![p.clone()]).await;
        let other = t
            .client()
            .prepare_send(cash_send(55).request_id(q.request_id()))
            .expect("prepare");
        let under_open_key = t.reserve(vec![other]).await;
        for unsure in [left_unsent, under_open_key] {
            assert!(!unsure[0].is_held());
            assert_eq!(
                t.unreserve(unsure.into_iter().next().expect("one"))
                    .await
                    .expect("given back"),
                Unreserved::TakenOver
            );
        }
        intent_writes_fail(&place, false).await;
        assert!(sb.transfers().is_empty(), "nothing sent");
        drop(open);
        journal.close().await;
    }
}

/// Reserve `p` and give it back: recorded as never sent, as a batch stopped before it leaves it.
async fn give_back(
    t: &whish_journal::JournaledTransfer,
    p: &whish_money_transfer::PreparedTransfer,
) {
    let reserved = t.reserve(vec![p.clone()]).await;
    assert_eq!(
        t.unreserve(reserved.into_iter().next().expect("one"))
            .await
            .expect("given back"),
        Unreserved::NeverSent
    );
}

/// A check's mark moves past the check's own reservation only when no other entry was recorded
/// among it: the next read then starts after its own rows, and it still reads every other
/// process's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mark_moves_past_a_reservation_only_when_nothing_else_was_recorded_among_it() {
    for place in places("reserve-mark-past").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let client = transfer(&sb, 0);
        let target = client.target();
        let t = journal.transfer(client);
        let prepare = |n: i64| t.client().prepare_send(cash_send(n)).expect("prepare");
        let keys = |r: &[whish_journal::ReservedSend]| -> Vec<String> {
            r.iter()
                .map(|r| r.prepared().request_id().to_string())
                .collect()
        };
        let read_since = async |mark| {
            let mut seen = Vec::new();
            journal
                .sends_that_may_have_paid_since(&target, mark, |s| seen.push(s.key.to_owned()))
                .await
                .expect("read since");
            seen
        };
        let first = t.reserve(vec![prepare(50)]).await;
        let mark = journal.sends_mark().await.expect("mark");
        assert_eq!(
            mark.past(&first),
            mark,
            "an entry before the mark moves nothing"
        );
        assert_eq!(
            whish_journal::SendsMark::default().past(&first),
            mark,
            "the first entries of a journal: the default mark moves past them"
        );
        // Its own rows only: the next read starts after them.
        // A key recorded before (here the first one, before the mark) is not this
        // reservation's, and does not stop the mark. (Among the others, on PostgreSQL the id
        // its conflict used up leaves a gap: the mark stays, and the next read reads them.)
        let own = t
            .reserve(vec![
                prepare(51),
                prepare(52),
                prepare(53),
                first[0].prepared().clone(),
            ])
            .await;
        assert!(!own[3].is_held());
        let past = mark.past(&own);
        assert_ne!(past, mark);
        assert!(read_since(past).await.is_empty());
        // Another process's send recorded after the read, then its own: the mark stays, and
        // the next read finds the other's and its own.
        let other = t.reserve(vec![prepare(54)]).await;
        let own = t.reserve(vec![prepare(55), prepare(56)]).await;
        assert_eq!(past.past(&own), past);
        let mut expected = keys(&other);
        expected.extend(keys(&own));
        assert_eq!(read_since(past).await, expected);
        journal.close().await;
    }
}
