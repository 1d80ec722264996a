//! Adversarial (15th review): `Journal::abandon` raced by two processes on every backend, and
//! abandon of a send recorded with the fee deducted. A probe that fails is a lie found; one that
//! passes an attack that held up. SQLite and (with WHISH_TEST_POSTGRES_URL) PostgreSQL.

mod common;

use std::time::Duration;

use common::{places, sandbox, transfer, transfers_with};
use whish_journal::{Abandoned, Clients, Operation, Recovery, Service, State};
use whish_sandbox::{Endpoint, Fault};

/// The lies found, one for each place (SQLite, PostgreSQL), all told at the end.
fn tell(lies: Vec<String>) {
    assert!(lies.is_empty(), "{}", lies.join("\n"));
}

/// Held up: two processes (two journals, two owners) abandon the same lost send at once, each
/// status read slowed. Exactly one records it; the other says another holds it (or that it is
/// final now), never `Recorded` twice, never a write over the first; the entry is refused,
/// abandoned, and nothing is sent.
#[tokio::test]
async fn two_processes_abandoning_one_entry_record_it_once() {
    let mut lies = Vec::new();
    for place in places("adv14-abandon-race").await {
        let sb = sandbox().await;
        let j1 = place.open().await;
        let j2 = place.open().await;
        let (lost, _applied) = common::lost_and_applied_for_the_operator(&sb, &j1, 41, 42).await;
        let key = lost.request_id().to_string();
        sb.inject(
            Endpoint::TransferStatus,
            Fault::Delay(Duration::from_millis(100)),
            2,
        );
        let c1 = Clients::new().transfer(transfer(&sb, 0));
        let c2 = Clients::new().transfer(transfer(&sb, 0));
        let (a, b) = tokio::join!(
            j1.abandon(&c1, Service::MoneyTransfer, Operation::Send, &key, "one"),
            j2.abandon(&c2, Service::MoneyTransfer, Operation::Send, &key, "two"),
        );
        let (a, b) = (a.expect("abandon"), b.expect("abandon"));
        let recorded = [&a, &b]
            .iter()
            .filter(|x| matches!(x, Abandoned::Recorded { .. }))
            .count();
        let other_ok = [&a, &b].iter().all(|x| {
            matches!(
                x,
                Abandoned::Recorded { .. }
                    | Abandoned::HeldElsewhere { .. }
                    | Abandoned::NotWaiting {
                        state: State::Refused
                    }
            )
        });
        let entry = common::entry_of(&j1, Service::MoneyTransfer, Operation::Send, &key).await;
        let why = entry
            .outcome
            .as_ref()
            .and_then(|o| o.message.clone())
            .unwrap_or_default();
        let who = if matches!(a, Abandoned::Recorded { .. }) {
            "one"
        } else {
            "two"
        };
        if recorded != 1
            || !other_ok
            || entry.state != State::Refused
            || !why.contains(&format!("abandoned by a person: {who};"))
            || transfers_with(&sb, lost.request_id().get()) != 0
        {
            lies.push(format!("{place:?}: {a:?} / {b:?}; entry {entry:?}"));
        }
    }
    tell(lies);
}

/// Held up: a send recorded with the fee deducted (`deduct_fees`), applied (its reply lost) and
/// handed to a person. Abandon reads it by status, and the activity log (whose `total` is the
/// amount sent with the fee deducted) shows it is this request: `Received`, never closed, never
/// "may be someone else's".
#[tokio::test]
async fn abandon_of_an_applied_fee_deducted_send_says_received() {
    let mut lies = Vec::new();
    for place in places("adv14-abandon-deducted").await {
        let sb = sandbox().await;
        let j = place.open().await;
        let t = j.transfer(transfer(&sb, 0));
        let p = t
            .client()
            .prepare_send(common::cash_send_fee_deducted(50))
            .expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
        assert!(t.send(&p).await.expect_err("dropped").outcome_unknown());
        assert_eq!(transfers_with(&sb, p.request_id().get()), 1, "setup");
        let r = j
            .recover(
                &Clients::new().transfer(transfer(&sb, 0)),
                &Recovery::new().deadline(Duration::ZERO),
            )
            .await
            .expect("recover");
        assert_eq!(r.needs_operator, 1, "setup: {r:?}");
        let key = p.request_id().to_string();
        let done = j
            .abandon(
                &Clients::new().transfer(transfer(&sb, 0)),
                Service::MoneyTransfer,
                Operation::Send,
                &key,
                "paid in cash",
            )
            .await
            .expect("abandon");
        let state = common::state_of(&j, Service::MoneyTransfer, Operation::Send, &key).await;
        if !matches!(done, Abandoned::Received { .. }) || state != State::NeedsOperator {
            lies.push(format!("{place:?}: {done:?}, entry {state}"));
        }
    }
    tell(lies);
}
