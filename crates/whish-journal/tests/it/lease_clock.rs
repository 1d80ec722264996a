//! A lease's end is read from the clock when the statement that writes it runs: a take that
//! waited for another process's write lock longer than a lease still holds its lease after.

use std::time::Duration;

use whish_journal::{Journal, Recorded, Service};

use crate::support::{Place, places};

const LEASE: Duration = Duration::from_secs(1);

#[tokio::test]
async fn a_lease_taken_after_a_wait_for_the_lock_is_not_already_over() {
    let Some(Place::Sqlite(url)) = places("lease_clock").await.into_iter().next() else {
        panic!("a SQLite place first");
    };
    let open = || async {
        Journal::builder(&url)
            .lease(LEASE)
            .open()
            .await
            .expect("open")
    };
    let (a, b, c) = (open().await, open().await, open().await);
    let Recorded::New(_) = a
        .record_change(Service::MoneyTransfer, "transfer:11:PAID", b"{}")
        .await
        .expect("record")
    else {
        panic!("new");
    };
    tokio::time::sleep(LEASE + Duration::from_millis(200)).await;
    // Another process holds the write lock for longer than a lease; b's take waits for it.
    let path = url.trim_start_matches("sqlite:").to_owned();
    let lock = tokio::task::spawn_blocking(move || {
        whish_testkit::hold_write_lock(std::path::Path::new(&path), Duration::from_millis(2500))
    })
    .await
    .expect("join");
    let Some(lock) = lock else {
        whish_testkit::not_run("lease_clock", "the test", "sqlite3 is not installed");
        return;
    };
    let taken = b
        .take_changes(10, false)
        .await
        .expect("take after the wait");
    assert_eq!(taken.len(), 1, "b takes the change once the lock is free");
    // b's lease started when its statement ran: c, right after, finds it live.
    let also = c.take_changes(10, false).await.expect("take");
    assert!(
        also.is_empty(),
        "b's lease was over when it was written: c took the change too"
    );
    tokio::task::spawn_blocking(move || lock.join())
        .await
        .expect("join")
        .expect("the lock holder");
    for j in [a, b, c] {
        j.close().await;
    }
}
