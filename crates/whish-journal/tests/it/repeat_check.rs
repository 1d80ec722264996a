//! The check for a payment made before (`Journal::sends_that_may_have_paid`): every
//! money-transfer send to the client's service and account that is accepted or not final, and
//! those recorded before entries named a target, newest first, across pages; none refused, none
//! of another account or service, none older than the `REPEAT_LOOKBACK` most recent entries.
//! SQLite files and the PostgreSQL server when one is given.

use crate::support::{cash_send, fill, journal_sql, places, sandbox, transfer, transfer_at};
use whish_journal::{Listing, REPEAT_LOOKBACK, State};

/// The keys and states the check hands over, in its order.
async fn visited(journal: &whish_journal::Journal, target: &str) -> Vec<(String, State)> {
    let mut seen = Vec::new();
    journal
        .sends_that_may_have_paid(target, |s| seen.push((s.key.to_owned(), s.state)))
        .await
        .expect("read the sends");
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repeat_check_reads_every_send_that_may_have_paid_here_and_no_other() {
    for place in places("repeat-check").await {
        let sb = sandbox().await;
        let journal = place.open_steady().await;
        let here = journal.transfer(transfer(&sb, 0));
        let target = here.client().target();
        // More sends than one page holds, each its own body.
        let prepared: Vec<_> = (0..2_500)
            .map(|i| {
                here.client()
                    .prepare_send(cash_send(10 + i))
                    .expect("prepare")
            })
            .collect();
        assert!(here.reserve(prepared).await.iter().all(|r| r.is_held()));
        // Sends to another service, with bodies the sends here also have.
        let elsewhere = journal.transfer(transfer_at("http://127.0.0.1:9/api", &sb, 0));
        let theirs: Vec<_> = (0..10)
            .map(|i| {
                elsewhere
                    .client()
                    .prepare_send(cash_send(10 + i))
                    .expect("prepare")
            })
            .collect();
        assert!(elsewhere.reserve(theirs).await.iter().all(|r| r.is_held()));
        assert_ne!(elsewhere.client().target(), target);
        // A tenth refused (no transfer), a tenth accepted, a tenth recorded before entries named
        // their target, a tenth waiting for an operator; the rest stay intended.
        journal_sql(
            &place,
            "UPDATE whish_journal_entries SET state = 'refused' WHERE id % 10 = 0",
        )
        .await;
        journal_sql(
            &place,
            "UPDATE whish_journal_entries SET state = 'accepted' WHERE id % 10 = 1",
        )
        .await;
        journal_sql(
            &place,
            "UPDATE whish_journal_entries SET target = NULL WHERE id % 10 = 2 AND id <= 2500",
        )
        .await;
        journal_sql(
            &place,
            "UPDATE whish_journal_entries SET state = 'needs-operator' WHERE id % 10 = 3",
        )
        .await;

        let seen = visited(&journal, &target).await;
        let all = journal
            .list(&Listing::new().limit(u32::MAX))
            .await
            .expect("list");
        let expected: Vec<(String, State)> = all
            .iter()
            .filter(|e| e.may_have_paid(&target))
            .map(|e| (e.key.clone(), e.state))
            .collect();
        assert_eq!(seen.len(), 2_250, "every send here but the refused ones");
        assert_eq!(seen, expected, "newest first, as the journal lists them");
        assert!(seen.iter().all(|(_, s)| *s != State::Refused));
        let count = |state: State| seen.iter().filter(|(_, s)| *s == state).count();
        assert_eq!(
            (
                count(State::Intended),
                count(State::Accepted),
                count(State::NeedsOperator)
            ),
            (1_750, 250, 250)
        );
        let untargeted: Vec<&String> = all
            .iter()
            .filter(|e| e.target.is_none())
            .map(|e| &e.key)
            .collect();
        assert_eq!(untargeted.len(), 250);
        assert!(untargeted.iter().all(|k| seen.iter().any(|(s, _)| s == *k)));
        // The other service's sends are its own.
        assert_eq!(
            visited(&journal, &elsewhere.client().target()).await.len(),
            250 + 10 - 1
        );

        // The check reads the REPEAT_LOOKBACK most recent entries, of every kind: with the
        // newest send here that may have paid (id 2499; 2500 was refused, 2501 to 2510 are
        // the other service's) the oldest of them, it is the one send read; one entry more,
        // and it is out of reach.
        let last_here = all.iter().find(|e| e.id == 2_499).expect("id 2499");
        assert!(last_here.may_have_paid(&target));
        fill(&place, REPEAT_LOOKBACK - 12).await;
        assert_eq!(
            visited(&journal, &target).await,
            [(last_here.key.clone(), last_here.state)]
        );
        fill(&place, 1).await;
        assert_eq!(visited(&journal, &target).await, []);
        let newest = here.client().prepare_send(cash_send(5)).expect("prepare");
        let key = newest.request_id().to_string();
        assert!(here.reserve(vec![newest]).await.iter().all(|r| r.is_held()));
        assert_eq!(visited(&journal, &target).await, [(key, State::Intended)]);
        journal.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_process_at_a_time_holds_the_repeat_check_until_it_lets_go() {
    use std::time::Duration;
    for place in places("repeat-check-lock").await {
        // Two handles on one journal: two connections, two lock holders, as two processes are.
        let first = place.open_steady().await;
        let second = place.open_steady().await;
        let held = first.lock_repeat_check().await.expect("the first holds it");
        let waiting = tokio::spawn(async move {
            let lock = second
                .lock_repeat_check()
                .await
                .expect("the second holds it");
            (second, lock)
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !waiting.is_finished(),
            "{}: a second holder waits while the first holds it",
            place.url()
        );
        held.release().await;
        let (second, lock) = tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("released, the waiting holder gets it")
            .expect("join");

        // A hold dropped without its release (a process that dies: its file or its session
        // is closed) lets the next one in too.
        let next = tokio::spawn(async move { first.lock_repeat_check().await });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!next.is_finished(), "{}: still held", place.url());
        drop(lock);
        let again = tokio::time::timeout(Duration::from_secs(10), next)
            .await
            .expect("dropped, the waiting holder gets it")
            .expect("join")
            .expect("held");
        again.release().await;
        drop(second);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_intent_is_recorded_under_a_repeat_check_whose_session_ended() {
    use crate::support::Place;
    use std::time::Duration;
    use whish_journal::Unreserved;
    for place in places("repeat-check-lapse").await {
        let sb = sandbox().await;
        let journal = place.open_steady().await;
        let here = journal.transfer(transfer(&sb, 0));
        let mut check = journal.lock_repeat_check().await.expect("held");
        if let Place::Postgres(_) = place {
            // The server ends the lock's session (a restart, a cut connection): the lock goes,
            // and its holder does not know yet.
            journal_sql(
                &place,
                "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' \
                 AND granted AND classid = 2003331443 AND objid = 1747808880 AND database = \
                 (SELECT oid FROM pg_database WHERE datname = current_database())",
            )
            .await;
            let prepared = here.client().prepare_send(cash_send(10)).expect("prepare");
            let reserved = here
                .reserve_under(&mut check, vec![prepared])
                .await
                .pop()
                .expect("one");
            assert!(
                !reserved.is_held(),
                "written on the ended session: not recorded, not to be sent"
            );
            assert_eq!(
                here.unreserve(reserved).await.expect("given back"),
                Unreserved::NeverSent
            );
            let other = place.open_steady().await;
            let next = tokio::time::timeout(Duration::from_secs(10), other.lock_repeat_check())
                .await
                .expect("the ended session's lock is free")
                .expect("held");
            next.release().await;
        } else {
            // SQLite's lock lasts as long as its descriptor: the intent is written under it.
            let prepared = here.client().prepare_send(cash_send(10)).expect("prepare");
            let reserved = here
                .reserve_under(&mut check, vec![prepared])
                .await
                .pop()
                .expect("one");
            assert!(reserved.is_held());
            assert_eq!(
                here.unreserve(reserved).await.expect("given back"),
                Unreserved::NeverSent
            );
        }
        check.release().await;
        sb.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_kept_up_to_date_reads_only_the_sends_recorded_after_its_mark() {
    use whish_journal::SendsMark;
    for place in places("repeat-check-since").await {
        let sb = sandbox().await;
        let journal = place.open_steady().await;
        let here = journal.transfer(transfer(&sb, 0));
        let target = here.client().target();
        let prepare = |from: i64, n: i64| -> Vec<_> {
            (from..from + n)
                .map(|i| here.client().prepare_send(cash_send(i)).expect("prepare"))
                .collect()
        };
        assert!(
            here.reserve(prepare(10, 5))
                .await
                .iter()
                .all(|r| r.is_held())
        );
        let mark = journal.sends_mark().await.expect("mark");
        // More than a page after the mark.
        let later = prepare(100, 1_200);
        let keys: Vec<String> = later.iter().map(|p| p.request_id().to_string()).collect();
        assert!(here.reserve(later).await.iter().all(|r| r.is_held()));
        let mut seen = Vec::new();
        let next = journal
            .sends_that_may_have_paid_since(&target, mark, |s| seen.push(s.key.to_owned()))
            .await
            .expect("read");
        assert_eq!(
            seen,
            keys,
            "{}: every send after the mark, oldest first",
            place.url()
        );
        let mut again = 0;
        let last = journal
            .sends_that_may_have_paid_since(&target, next, |_| again += 1)
            .await
            .expect("read");
        assert_eq!((again, last), (0, next), "{}: nothing new", place.url());
        let mut all = 0;
        journal
            .sends_that_may_have_paid_since(&target, SendsMark::default(), |_| all += 1)
            .await
            .expect("read");
        assert_eq!(
            all,
            1_205,
            "{}: the default mark reads every send",
            place.url()
        );
        sb.shutdown().await;
    }
}
