//! The orphan of an insert whose answer was lost is the entry that insert wrote, found by the
//! token drawn for it alone: another task's send of the same key in flight, or an earlier send
//! whose outcome was never written, is never taken for it, marked `refused`/`not-sent`, or
//! told "nothing was sent" while the service applied it.

use crate::support;

use std::time::Duration;

use crate::support::{Place, cash_send, journal_sql, places, sandbox, transfer, transfers_with};
use whish_journal::{Operation, Service, State};
use whish_sandbox::{Endpoint, Fault};

/// A trigger that fails every insert of an intent whose key is already recorded (the insert of
/// a request recorded before: SQLITE_BUSY after the busy wait, a cut connection), and lets every
/// other write through, `abandon`'s included.
const FAIL_REINSERT: &str = "CREATE TRIGGER orphan_fail BEFORE INSERT ON whish_journal_entries \
     WHEN NEW.state = 'intended' AND EXISTS (SELECT 1 FROM whish_journal_entries e \
       WHERE e.service = NEW.service AND e.operation = NEW.operation AND e.idem_key = NEW.idem_key) \
     BEGIN SELECT RAISE(ABORT, 'database is locked'); END";

/// A trigger that fails every outcome write (a full disk, a lock held past the busy wait).
const FAIL_OUTCOME: &str = "CREATE TRIGGER orphan_outcome BEFORE UPDATE ON whish_journal_entries \
     WHEN NEW.state <> 'intended' BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_task_whose_insert_fails_never_marks_the_first_tasks_send_in_flight_not_sent() {
    let place = places("orphan-inflight").await.remove(0);
    assert!(matches!(place, Place::Sqlite(_)));
    let sb = sandbox().await;
    let j = place.open().await;
    let t = j.transfer(transfer(&sb, 0));
    let p = t.client().prepare_send(cash_send(41)).expect("prepare");
    let key = p.request_id().to_string();

    // Task A: the first send; the service applies it and answers after 800 ms.
    sb.inject(
        Endpoint::TransferSend,
        Fault::Delay(Duration::from_millis(800)),
        1,
    );
    let a = {
        let t = t.clone();
        let p = p.clone();
        tokio::spawn(async move { t.send(&p).await })
    };
    support::until_calls(&sb, Endpoint::TransferSend, 1).await;
    assert_eq!(
        support::state_of(&j, Service::MoneyTransfer, Operation::Send, &key).await,
        State::Intended,
        "setup: A is in flight"
    );
    // Task B, same process, same prepared request (a retry loop, a double click): its insert
    // fails.
    journal_sql(&place, FAIL_REINSERT).await;
    let b = t.send(&p).await;
    journal_sql(&place, "DROP TRIGGER orphan_fail").await;
    let a = a.await.expect("join");
    j.flush().await;
    let e = support::entry_of(&j, Service::MoneyTransfer, Operation::Send, &key).await;
    eprintln!("A: {:?}", a.as_ref().map(|_| "accepted"));
    eprintln!("B: {b:?}");
    eprintln!("journal: {:?} {:?}", e.state, e.outcome);
    assert_eq!(
        transfers_with(&sb, p.request_id().get()),
        1,
        "the service applied it"
    );
    assert!(a.is_ok(), "A was accepted: {a:?}");
    let b_says_nothing_sent = matches!(&b, Err(err) if err.nothing_sent());
    let journal_says_not_sent = e.state == State::Refused;

    // What the next send of it (the batch run again, `whish transfer resend`) is told.
    let again = t.send(&p).await;
    let e2 = support::entry_of(&j, Service::MoneyTransfer, Operation::Send, &key).await;
    eprintln!(
        "next send: {again:?}; journal: {:?} {:?}",
        e2.state, e2.outcome
    );
    assert!(
        !b_says_nothing_sent && !journal_says_not_sent,
        "the transfer the service applied (A) is told `nothing was sent` to B ({}) and recorded \
         {:?} {:?}; the next send is told {again:?} and the journal then says {:?}",
        b_says_nothing_sent,
        e.state,
        e.outcome.as_ref().map(|o| o.result.clone()),
        e2.state
    );
    assert!(
        !matches!(&again, Err(err) if err.is_refused() || err.nothing_sent())
            && e2.state != State::Refused,
        "the paid transfer is later reported {again:?} and recorded {:?}",
        e2.state
    );
    j.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resend_whose_insert_fails_after_an_unrecorded_outcome_is_never_told_nothing_sent() {
    let place = places("orphan-unrecorded").await.remove(0);
    let sb = sandbox().await;
    let j = place.open().await;
    let t = j.transfer(transfer(&sb, 0));
    let p = t.client().prepare_send(cash_send(42)).expect("prepare");
    let key = p.request_id().to_string();

    // The first send reaches the service, its reply is lost; the journal cannot record that
    // (the lock held past the busy wait): the entry stays as its insert left it.
    journal_sql(&place, FAIL_OUTCOME).await;
    sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
    let first = t.send(&p).await;
    j.flush().await;
    journal_sql(&place, "DROP TRIGGER orphan_outcome").await;
    eprintln!("first: {first:?}");
    assert!(
        matches!(&first, Err(e) if e.outcome_unknown()),
        "setup: {first:?}"
    );
    assert_eq!(
        transfers_with(&sb, p.request_id().get()),
        1,
        "setup: applied"
    );
    let e = support::entry_of(&j, Service::MoneyTransfer, Operation::Send, &key).await;
    eprintln!(
        "journal after the first send: {:?} {:?}",
        e.state, e.outcome
    );

    // The caller does as told: resends with the same key, and this insert fails too.
    journal_sql(&place, FAIL_REINSERT).await;
    let resend = t.send(&p).await;
    journal_sql(&place, "DROP TRIGGER orphan_fail").await;
    let e = support::entry_of(&j, Service::MoneyTransfer, Operation::Send, &key).await;
    eprintln!("resend: {resend:?}; journal: {:?} {:?}", e.state, e.outcome);
    assert!(
        !matches!(&resend, Err(err) if err.nothing_sent()),
        "a transfer the service applied is told `nothing was sent`: {resend:?}"
    );
    assert_ne!(
        e.state,
        State::Refused,
        "a transfer the service applied is recorded {:?}",
        e.outcome
    );
    j.close().await;
}

/// The same lie with no trigger: one caller, one task. Its send times out (the service applied
/// it), and another process holds the journal's write lock for 70 s from then on, so the
/// outcome write fails after the busy wait; the caller resends the same prepared request as it
/// is told to; that insert fails after its busy wait too; the lock goes; `abandon` finds the
/// first send's entry `intended`, this process's, token 1, and records it never sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resend_under_a_locked_journal_is_never_told_nothing_sent_for_an_applied_transfer() {
    if !whish_testkit::has_command("sqlite3") {
        whish_testkit::not_run(
            "insert_failed_orphan",
            "the test",
            "no sqlite3 command (Debian package sqlite3)",
        );
        return;
    }
    let place = places("orphan-locked").await.remove(0);
    let sb = sandbox().await;
    let j = place.open().await;
    let t = j.transfer(transfer(&sb, 0));
    let p = t.client().prepare_send(cash_send(43)).expect("prepare");
    let key = p.request_id().to_string();
    let started = std::time::Instant::now();
    sb.inject(Endpoint::TransferSend, Fault::Stall, 1);
    let first = {
        let t = t.clone();
        let p = p.clone();
        tokio::spawn(async move { t.send(&p).await })
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    let url = place.url().to_owned();
    let lock = tokio::task::spawn_blocking(move || hold_write_lock(&url, Duration::from_secs(70)))
        .await
        .expect("join")
        .expect("sqlite3 holds the lock");
    let first = first.await.expect("join");
    eprintln!("{:?} first: {first:?}", started.elapsed());
    assert!(
        matches!(&first, Err(e) if e.outcome_unknown()),
        "setup: {first:?}"
    );
    assert_eq!(
        transfers_with(&sb, p.request_id().get()),
        1,
        "setup: applied"
    );
    // As the SDK says of an unknown outcome: send the same prepared request again.
    let resend = t.send(&p).await;
    eprintln!("{:?} resend: {resend:?}", started.elapsed());
    let _ = tokio::task::spawn_blocking(move || lock.join()).await;
    j.flush().await;
    let e = support::entry_of(&j, Service::MoneyTransfer, Operation::Send, &key).await;
    eprintln!("journal: {:?} {:?}", e.state, e.outcome);
    assert!(
        !matches!(&resend, Err(err) if err.nothing_sent()),
        "a transfer the service applied is told `nothing was sent`: {resend:?}; journal {:?}",
        e.state
    );
    assert_ne!(
        e.state,
        State::Refused,
        "a transfer the service applied is recorded {:?}",
        e.outcome
    );
    j.close().await;
}

/// [`whish_testkit::hold_write_lock`] of the SQLite journal at `url`.
fn hold_write_lock(url: &str, hold: Duration) -> Option<std::thread::JoinHandle<()>> {
    whish_testkit::hold_write_lock(std::path::Path::new(url.strip_prefix("sqlite:")?), hold)
}
