//! A SQLite journal whose file is deleted (or replaced) under a running process: nothing is
//! sent with its intent in a file nobody will read, a paid transfer is never reported refused
//! by the next run on the new file, and the journal never creates the file again by itself.

use crate::support::{LEASE, cash_send, sandbox, transfer, transfers_with};
use whish_journal::Journal;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reserved_send_after_the_file_was_deleted_is_never_a_silent_success() {
    let dir = std::env::temp_dir().join(format!("whish-journal-adv-gone-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("journal.sqlite");
    let url = format!("sqlite:{}", path.display());
    let sb = sandbox().await;
    let a = Journal::builder(&url)
        .lease(LEASE)
        .open()
        .await
        .expect("open");
    let t = a.transfer(transfer(&sb, 0));
    let p = t.client().prepare_send(cash_send(41)).expect("prepare");
    let control = t.client().prepare_send(cash_send(42)).expect("prepare");
    let mut reserved = t.reserve(vec![p.clone(), control.clone()]).await;
    assert!(reserved.iter().all(|r| r.is_held()));
    let control_r = reserved.pop().expect("two");
    let r = reserved.pop().expect("one");

    // The file goes away (an operator's cleanup, a restore that replaces it).
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
    assert!(a.check().is_err(), "the journal knows its file is gone");

    // An ordinary send of the control request notices and sends nothing...
    let e = t.send(&control).await.expect_err("the file is gone");
    eprintln!("send after the file went: {e}");
    assert!(e.nothing_sent(), "{e}");
    assert_eq!(transfers_with(&sb, control.request_id().get()), 0);
    let _ = control_r;

    // ...but the reserved send goes out, and says nothing.
    let answer = t.send_reserved(r).await;
    eprintln!("send_reserved after the file went: {answer:?}");
    let sent = transfers_with(&sb, p.request_id().get());
    eprintln!("transfers under its Request-id: {sent}");

    // The next run, on the journal at that path (a new file): the same request, prepared anew.
    let b = Journal::builder(&url)
        .lease(LEASE)
        .open()
        .await
        .expect("open");
    let tb = b.transfer(transfer(&sb, 0));
    let again = tb
        .client()
        .prepare_send(cash_send(41).request_id(p.request_id()))
        .expect("prepare");
    let next = tb.send(&again).await;
    eprintln!("the next run's send: {next:?}");

    assert!(
        !(answer.is_ok() && sent == 1),
        "send_reserved sent a transfer although the journal file was deleted (its intent is in a file nobody reads), and reported plain success"
    );
    assert!(
        !matches!(&next, Err(e) if e.is_refused() && sent == 1),
        "a paid transfer reported refused by the next run: {next:?}"
    );
    b.close().await;
}

/// Lookups after the file went, on connections the pool opens then, fail: none of them creates
/// an empty journal at the path, which the next run would take for a journal holding nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_opened_after_the_file_was_deleted_does_not_create_it_again() {
    let dir =
        std::env::temp_dir().join(format!("whish-journal-gone-lookup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("journal.sqlite");
    let j = Journal::builder(format!("sqlite:{}", path.display()))
        .lease(LEASE)
        .open()
        .await
        .expect("open");
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
    // More lookups at once than the pool holds connections: it opens new ones.
    let mut lookups = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let j = j.clone();
        lookups.spawn(async move {
            j.entries(
                whish_journal::Service::MoneyTransfer,
                whish_journal::Operation::Send,
                &["1", "2", "3"],
            )
            .await
        });
    }
    let answers = lookups.join_all().await;
    let failed = answers.iter().filter(|a| a.is_err()).count();
    assert!(
        failed >= 1,
        "a new connection read a file that is gone: {answers:?}"
    );
    for a in answers.iter().filter_map(|a| a.as_ref().err()) {
        assert_eq!(a.kind, whish_journal::JournalErrorKind::Read, "{a}");
    }
    assert!(
        !path.exists(),
        "a connection created an empty journal where the deleted one was"
    );
    j.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
