//! The background write of an accepted outcome fails (a full disk: a trigger
//! raises on the UPDATE), after the call already returned "accepted". For a send of a request
//! that had been given back (`refused`, `not-sent`), the entry stays FINAL (`refused`,
//! `not-sent`): this process's recovery says everything is final, and the next send of it is a
//! first send, refused with `transfer.already.done` and recorded refused: the paid transfer is
//! reported refused.

use crate::support::{LEASE, cash_send, places, sandbox, transfer, transfers_with};
use sqlx::Connection;
use whish_journal::{Clients, Listing, Operation, Recovery, Service, State, Unreserved};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_back_send_whose_background_outcome_write_fails_is_later_reported_refused() {
    let place = places("adv-bg-fail").await.remove(0);
    let sb = sandbox().await;
    let a = place.open().await;
    let t = a.transfer(transfer(&sb, 0));
    let p = t.client().prepare_send(cash_send(66)).expect("prepare");
    let id = p.request_id();
    let r = t.reserve(vec![p.clone()]).await.pop().expect("one");
    assert_eq!(
        t.unreserve(r).await.expect("given back"),
        Unreserved::NeverSent
    );
    let mut c = sqlx::SqliteConnection::connect(place.url())
        .await
        .expect("connect");
    sqlx::raw_sql(
        "CREATE TRIGGER adv_fail BEFORE UPDATE ON whish_journal_entries \
         WHEN NEW.state = 'accepted' BEGIN SELECT RAISE(ABORT, 'disk full'); END",
    )
    .execute(&mut c)
    .await
    .expect("trigger");
    let _ = t.send(&p).await.expect("accepted");
    assert_eq!(transfers_with(&sb, id.get()), 1);
    a.flush().await;
    let e = a
        .entry(Service::MoneyTransfer, Operation::Send, &id.to_string())
        .await
        .expect("read")
        .expect("there");
    eprintln!(
        "this process reads its accepted send as: {:?} {:?}",
        e.state, e.outcome
    );
    let report = a
        .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
        .await
        .expect("recover");
    eprintln!(
        "this process's recovery: all_final={} {report:?}",
        report.all_final()
    );
    sqlx::raw_sql("DROP TRIGGER adv_fail")
        .execute(&mut c)
        .await
        .expect("drop");

    // Another process, after the lease: the batch runs again.
    tokio::time::sleep(LEASE * 2).await;
    let b = place.open().await;
    let report = b
        .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
        .await
        .expect("recover");
    eprintln!(
        "the other process's recovery: all_final={} examined={}",
        report.all_final(),
        report.examined
    );
    let tb = b.transfer(transfer(&sb, 0));
    let again = tb
        .client()
        .prepare_send(cash_send(66).request_id(id))
        .expect("prepare");
    let answer = tb.send(&again).await;
    eprintln!("the next run's send: {answer:?}");
    let e = b
        .entry(Service::MoneyTransfer, Operation::Send, &id.to_string())
        .await
        .expect("read")
        .expect("there");
    eprintln!("the journal now: {:?} {:?}", e.state, e.outcome);
    assert_eq!(transfers_with(&sb, id.get()), 1);
    let open = b.list(&Listing::new().open()).await.expect("list");
    eprintln!("open: {}", open.len());
    assert!(
        !matches!(&answer, Err(err) if err.is_refused()) && e.state != State::Refused,
        "the paid transfer is reported and recorded refused: {answer:?}, journal {:?}",
        e.state
    );
    b.close().await;
    a.close().await;
}
