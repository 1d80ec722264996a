//! A reservation's inserts are cut into power-of-two pieces (`pow2_chunks`:
//! 7 requests go as 4, 2, 1; 100 as 64, 32, 4). A Request-id that appears again in a later piece,
//! or twice in one piece, with other bytes (another amount): the first must win, exactly once,
//! its bytes recorded, and the others must never be paid. Then every reservation is sent, the
//! ones recorded before as any send: the sandbox must hold exactly one transfer per Request-id,
//! of the first request's amount. SQLite and PostgreSQL.

use crate::support::{cash_send, places, sandbox, transfer};
use whish_core::RequestId;
use whish_journal::{Operation, Service, State};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_repeated_across_reservation_pieces_is_recorded_once_with_the_first_bytes() {
    for place in places("reserve-pieces").await {
        for n in [7usize, 100] {
            let sb = sandbox().await;
            let journal = place.open().await;
            let t = journal.transfer(transfer(&sb, 0));
            // Request i has Request-id base+i and amount 10+i, except the repeats: position 2
            // (same piece), 5 (second piece) and n-1 (last piece) reuse position 0's Request-id
            // with their own amount.
            let base = 7_000_000 + (n as i64) * 1000;
            let repeats = [2usize, 5, n - 1];
            let prepared: Vec<_> = (0..n)
                .map(|i| {
                    let id = if repeats.contains(&i) {
                        base
                    } else {
                        base + i as i64
                    };
                    t.client()
                        .prepare_send(
                            cash_send(10 + i as i64).request_id(RequestId::new(id).expect("id")),
                        )
                        .expect("prepare")
                })
                .collect();
            let first_body = prepared[0].body().to_vec();
            let reserved = t.reserve(prepared).await;
            let held: Vec<bool> = reserved.iter().map(|r| r.is_held()).collect();
            for (i, h) in held.iter().enumerate() {
                assert_eq!(
                    *h,
                    !repeats.contains(&i),
                    "{place:?} n={n}: position {i} held={h} (the first of a key wins, once)"
                );
            }
            let e = journal
                .entry(Service::MoneyTransfer, Operation::Send, &base.to_string())
                .await
                .expect("read")
                .expect("recorded");
            assert_eq!(
                e.request, first_body,
                "{place:?} n={n}: the first request's bytes"
            );
            let mut tasks = tokio::task::JoinSet::new();
            for r in reserved {
                let t = t.clone();
                let id = r.prepared().request_id();
                tasks.spawn(async move { (id, t.send_reserved(r).await.map(|_| ())) });
            }
            while let Some(done) = tasks.join_next().await {
                let (id, r) = done.expect("join");
                if let Err(e) = r {
                    eprintln!("{place:?} n={n}: {id}: {e}");
                }
            }
            journal.flush().await;
            let transfers = sb.transfers();
            let mut ids: Vec<i64> = transfers.iter().map(|t| t.request_id).collect();
            ids.sort_unstable();
            let before = ids.len();
            ids.dedup();
            assert_eq!(
                before,
                ids.len(),
                "{place:?} n={n}: a Request-id paid twice"
            );
            assert_eq!(
                ids.len(),
                n - repeats.len(),
                "{place:?} n={n}: one transfer each"
            );
            let first = transfers
                .iter()
                .find(|t| t.request_id == base)
                .expect("the first is paid");
            // Position 1 is 11 dollars, in the same fee bracket: the first (10 dollars) is
            // charged one dollar less (the repeats are 12, 15 and n+9 dollars).
            let second = transfers
                .iter()
                .find(|t| t.request_id == base + 1)
                .expect("the second is paid");
            assert_eq!(
                first.total + rust_decimal::Decimal::ONE,
                second.total,
                "{place:?} n={n}: the first request's amount is paid, not a repeat's: {first:?}"
            );
            let e = journal
                .entry(Service::MoneyTransfer, Operation::Send, &base.to_string())
                .await
                .expect("read")
                .expect("recorded");
            assert_eq!(e.state, State::Accepted, "{place:?} n={n}");
            assert_eq!(e.request, first_body, "{place:?} n={n}");
            journal.close().await;
        }
    }
}

/// A Request-id recorded as never sent, reserved twice in one reservation: first with other
/// bytes, then with its own. Only a key's first request may be recorded, and it is not the
/// recorded one: neither is held, and the entry stays as it was (recorded afresh for the
/// second, its lease would go to the first, whose bytes it does not hold).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_left_unsent_and_reserved_twice_is_recorded_afresh_only_for_its_first_request() {
    for place in places("reserve-unsent-twice").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let id = RequestId::new(7_900_001).expect("id");
        let own = t
            .client()
            .prepare_send(cash_send(11).request_id(id))
            .expect("prepare");
        let other = t
            .client()
            .prepare_send(cash_send(12).request_id(id))
            .expect("prepare");
        t.record_unsent(std::slice::from_ref(&own), "not sent: ctrl-c")
            .await
            .expect("recorded");
        let read = async || {
            journal
                .entry(Service::MoneyTransfer, Operation::Send, &id.to_string())
                .await
                .expect("read")
                .expect("recorded")
        };
        let before = read().await;
        let reserved = t.reserve(vec![other, own]).await;
        assert!(reserved.iter().all(|r| !r.is_held()), "neither is held");
        assert_eq!(read().await, before, "left as it was");
        assert_eq!(before.state, State::Refused);
        journal.close().await;
    }
}
