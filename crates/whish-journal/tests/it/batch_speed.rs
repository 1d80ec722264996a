//! The journal at batch speed, and that it still tells the truth: concurrent intents share one
//! commit and each gets its own entry; one request sent many times at once is one transfer; a
//! group that cannot commit sends nothing and leaves nothing a recovery would send; outcomes
//! written without waiting for the disk are read back; prune deletes in batches everything
//! eligible and nothing else. SQLite files and the PostgreSQL server when one is given.

use std::time::Duration;

use crate::support::{
    Place, cash_send, intent_writes_fail, places, sandbox, transfer, transfers_with,
};
use whish_journal::{Clients, Journal, Listing, Operation, Recovery, Service, State};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_intents_share_a_commit_and_each_gets_its_own_entry() {
    for place in places("group-commit").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let mut tasks = tokio::task::JoinSet::new();
        let mut keys = Vec::new();
        for i in 0..48 {
            let prepared = t.client().prepare_send(cash_send(10 + i)).expect("prepare");
            keys.push(prepared.request_id().to_string());
            let t = t.clone();
            tasks.spawn(async move { t.send(&prepared).await.map(|_| ()) });
        }
        while let Some(done) = tasks.join_next().await {
            done.expect("join").expect("accepted");
        }
        let mut ids = Vec::new();
        for key in &keys {
            let e = journal
                .entry(Service::MoneyTransfer, Operation::Send, key)
                .await
                .expect("read")
                .expect("recorded");
            assert_eq!(e.state, State::Accepted, "{key}");
            assert!(e.references.charges.is_some(), "the fee is kept");
            ids.push(e.id);
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 48, "one entry each");
        assert_eq!(sb.transfers().len(), 48);
        journal.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_request_sent_many_times_at_once_is_one_transfer() {
    for place in places("same-key").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let prepared = t.client().prepare_send(cash_send(33)).expect("prepare");
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let (t, p) = (t.clone(), prepared.clone());
            tasks.spawn(async move { t.send(&p).await });
        }
        let mut accepted = 0;
        while let Some(done) = tasks.join_next().await {
            match done.expect("join") {
                Ok(_) => accepted += 1,
                // Another call of this process holds the entry: never a refusal.
                Err(e) => assert!(e.outcome_unknown() || e.is_pending(), "{e}"),
            }
        }
        assert!(accepted >= 1);
        assert_eq!(transfers_with(&sb, prepared.request_id().get()), 1);
        assert_eq!(
            journal
                .find(&prepared.request_id().to_string())
                .await
                .expect("find")
                .len(),
            1
        );
        journal.close().await;
    }
}

#[tokio::test]
async fn outcomes_are_read_back_with_relaxed_and_durable_writes() {
    for place in places("outcomes").await {
        for durable in [false, true] {
            let sb = sandbox().await;
            let journal = Journal::builder(place.url())
                .durable_outcomes(durable)
                .open()
                .await
                .expect("open");
            let t = journal.transfer(transfer(&sb, 0));
            let prepared = t.client().prepare_send(cash_send(21)).expect("prepare");
            let _ = t.send(&prepared).await.expect("sent");
            // Another process (its own connections) reads, right after the call returned, the
            // outcome, or (when the outcome is recorded after the call) the entry still open
            // and held by the sender: its recovery sends nothing.
            let other = place.open().await;
            let key = prepared.request_id().to_string();
            let e = other
                .entry(Service::MoneyTransfer, Operation::Send, &key)
                .await
                .expect("read")
                .expect("recorded");
            if durable {
                assert_eq!(e.state, State::Accepted, "durable_outcomes(true)");
                assert!(e.references.ltn_number.is_some());
            } else {
                assert!(
                    matches!(e.state, State::Accepted | State::Intended),
                    "{:?}",
                    e.state
                );
            }
            let report = other
                .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
                .await
                .expect("recover");
            assert!(report.changes.is_empty(), "{report:?}");
            assert_eq!(sb.transfers().len(), 1, "nothing sent again");
            // The sender's own read waits for its outcome; a flush writes it and makes it
            // durable, and every process reads it then.
            let own = journal
                .entry(Service::MoneyTransfer, Operation::Send, &key)
                .await
                .expect("read")
                .expect("recorded");
            assert_eq!(own.state, State::Accepted, "durable_outcomes({durable})");
            journal.flush().await;
            let again = other
                .entry(Service::MoneyTransfer, Operation::Send, &key)
                .await
                .expect("read")
                .expect("recorded");
            assert_eq!(again.state, State::Accepted);
            assert!(again.references.ltn_number.is_some());
            other.close().await;
            journal.close().await;
        }
    }
}

async fn bulk_final(place: &Place, n: i64) {
    use sqlx::Connection;
    const SQL: &str = "INSERT INTO whish_journal_entries \
        (service, operation, idem_key, context, request, state, attempts, created_ms, updated_ms, \
         outcome, lease_token) VALUES ('money-transfer', 'send', $1, NULL, $2, 'accepted', 1, 0, 0, NULL, 0)";
    match place {
        Place::Sqlite(url) => {
            let mut c = sqlx::SqliteConnection::connect(url).await.expect("connect");
            let mut tx = c.begin().await.expect("begin");
            for i in 0..n {
                sqlx::query(SQL)
                    .bind(format!("bulk-{i}"))
                    .bind(&b"{}"[..])
                    .execute(&mut *tx)
                    .await
                    .expect("insert");
            }
            tx.commit().await.expect("commit");
        }
        Place::Postgres(url) => {
            let mut c = sqlx::PgConnection::connect(url).await.expect("connect");
            let mut tx = c.begin().await.expect("begin");
            for i in 0..n {
                sqlx::query(SQL)
                    .bind(format!("bulk-{i}"))
                    .bind(&b"{}"[..])
                    .execute(&mut *tx)
                    .await
                    .expect("insert");
            }
            tx.commit().await.expect("commit");
        }
    }
}

#[tokio::test]
async fn prune_deletes_in_batches_everything_eligible_and_nothing_else() {
    for place in places("prune-batches").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        bulk_final(&place, 2_345).await;
        // An open entry (its reply lost) and a fresh final one stay.
        let t = journal.transfer(transfer(&sb, 0));
        let open = t.client().prepare_send(cash_send(12)).expect("prepare");
        sb.inject(
            whish_sandbox::Endpoint::TransferSend,
            whish_sandbox::Fault::DropReply,
            1,
        );
        assert!(t.send(&open).await.expect_err("lost").outcome_unknown());
        let fresh = t.client().prepare_send(cash_send(13)).expect("prepare");
        let _ = t.send(&fresh).await.expect("sent");
        let pruned = journal
            .prune(Duration::from_secs(3600))
            .await
            .expect("prune");
        assert_eq!(pruned, 2_345, "every old final entry, over three batches");
        let left = journal
            .list(&Listing::new().limit(10_000))
            .await
            .expect("list");
        assert_eq!(left.len(), 2, "{left:?}");
        assert_eq!(
            journal
                .list(&Listing::new().open())
                .await
                .expect("open")
                .len(),
            1
        );
        journal.close().await;
    }
}

/// Every intent's insert fails in the database (a trigger raises an error, as a full disk or an
/// I/O error would at that statement), while sixteen sends start at once and share commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_cannot_commit_sends_nothing_and_leaves_nothing_to_send() {
    for place in places("group-fails").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let _ = t
            .send(&t.client().prepare_send(cash_send(5)).expect("prepare"))
            .await
            .expect("a first send, before inserts fail");
        intent_writes_fail(&place, true).await;
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..16 {
            let prepared = t.client().prepare_send(cash_send(40 + i)).expect("prepare");
            let t = t.clone();
            tasks.spawn(async move { t.send(&prepared).await });
        }
        while let Some(done) = tasks.join_next().await {
            let e = done
                .expect("join")
                .expect_err("the intent could not be recorded");
            assert!(e.nothing_sent(), "{e}");
        }
        assert_eq!(
            sb.transfers().len(),
            1,
            "nothing sent while the intents could not be recorded"
        );
        intent_writes_fail(&place, false).await;
        let report = journal
            .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
            .await
            .expect("recover");
        assert!(report.changes.is_empty(), "{report:?}");
        assert_eq!(sb.transfers().len(), 1, "and no recovery sends one");
        journal.close().await;
    }
}

/// Every outcome is written before the call returns: this process's own reads see it at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_reads_what_it_did_right_after_the_call() {
    for place in places("reads-own-writes").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        for i in 0..20 {
            let prepared = t.client().prepare_send(cash_send(60 + i)).expect("prepare");
            let _ = t.send(&prepared).await.expect("sent");
            let e = journal
                .entry(
                    Service::MoneyTransfer,
                    Operation::Send,
                    &prepared.request_id().to_string(),
                )
                .await
                .expect("read")
                .expect("recorded");
            assert_eq!(e.state, State::Accepted, "send {i}");
            assert_eq!(
                journal
                    .list(&Listing::new().open())
                    .await
                    .expect("list")
                    .len(),
                0
            );
        }
        journal.close().await;
    }
}
