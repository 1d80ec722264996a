//! `Journal::recover_entries` (the named entries only), `recover` listing the leases other tasks of
//! its own process hold, prune keeping abandoned entries, two processes abandoning one entry, and
//! abandon of a send recorded with the fee deducted. Each test asserts what a careful payment
//! engineer expects against what the sandbox holds, on SQLite and (with WHISH_TEST_POSTGRES_URL)
//! on PostgreSQL.

use crate::support;

use std::time::Duration;

use crate::support::{
    abandon_send, journal_sql, lost_and_applied_for_the_operator, places, sandbox, transfer,
    transfers_with,
};
use whish_journal::{Abandoned, Clients, Operation, Recovery, Service, State};
use whish_sandbox::{Endpoint, Fault};

/// The lies found, one for each place (SQLite, PostgreSQL), all told at the end.
fn tell(lies: Vec<String>) {
    assert!(lies.is_empty(), "{}", lies.join("\n"));
}

/// The journal owner name of a process of this host, this boot and this PID namespace that has
/// exited: one the journal can prove is gone.
fn a_dead_process_of_this_host() -> String {
    let mut child = std::process::Command::new("true").spawn().expect("spawn");
    let pid = child.id();
    child.wait().expect("wait");
    let read = |path: &str| std::fs::read_to_string(path).expect(path).trim().to_owned();
    let pidns = std::fs::read_link("/proc/self/ns/pid").expect("the PID namespace");
    format!(
        "host={} boot={} pidns={} pid={pid} start=12345 id=deadbeef",
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/random/boot_id"),
        pidns.display()
    )
}

/// Held up (expected): `recover_entries` is given the keys of an entry waiting for the operator
/// whose lease a killed process of this host still holds (an hour left), of an accepted entry, of
/// an entry a person abandoned, and a key with no entry. The dead holder's entry is taken at once
/// and settled the safe way (read by status: never received; sent once); the final ones are not
/// touched and nothing else is sent.
#[tokio::test]
async fn recover_entries_takes_a_dead_holders_entry_and_leaves_the_final_ones() {
    let mut lies = Vec::new();
    for place in places("entries-dead").await {
        let sb = sandbox().await;
        let j = place.open().await;
        let (lost, applied) = lost_and_applied_for_the_operator(&sb, &j, 30, 31).await;
        let clients = Clients::new().transfer(transfer(&sb, 0));
        // The applied one is confirmed (accepted) by a retry of its own.
        let akey = applied.request_id().to_string();
        let r = j
            .recover_entries(
                &clients,
                &Recovery::new().retry_needs_operator(true),
                &[(Service::MoneyTransfer, Operation::Send, akey.as_str())],
            )
            .await
            .expect("recover_entries");
        assert_eq!(r.changes.len(), 1, "setup: {r:?}");
        // Another waits for the operator and is abandoned: final, refused.
        let t = j.transfer(transfer(&sb, 0));
        let third = t
            .client()
            .prepare_send(support::cash_send(32))
            .expect("prepare");
        sb.inject(
            whish_sandbox::Endpoint::TransferSend,
            whish_sandbox::Fault::DropRequest,
            1,
        );
        let _ = t.send(&third).await.expect_err("dropped");
        let _ = j
            .recover(&clients, &Recovery::new().deadline(Duration::ZERO))
            .await
            .expect("recover");
        let tkey = third.request_id().to_string();
        let done = abandon_send(&j, &clients, &tkey, "no").await;
        assert!(
            matches!(done, Abandoned::Recorded { .. }),
            "setup: {done:?}"
        );
        // The lost one is held by a killed process of this host, an hour left on its lease.
        let lkey = lost.request_id().to_string();
        let n = journal_sql(
            &place,
            &format!(
                "UPDATE whish_journal_entries SET lease_owner = '{}', \
                 lease_until_ms = lease_until_ms_base + 3600000 WHERE idem_key = '{lkey}'",
                a_dead_process_of_this_host()
            )
            .replace(
                "lease_until_ms_base",
                "(SELECT MAX(updated_ms) FROM whish_journal_entries)",
            ),
        )
        .await;
        assert_eq!(n, 1, "setup");
        let before = sb.transfers().len();
        let r = j
            .recover_entries(
                &clients,
                &Recovery::new().retry_needs_operator(true),
                &[
                    (Service::MoneyTransfer, Operation::Send, lkey.as_str()),
                    (Service::MoneyTransfer, Operation::Send, akey.as_str()),
                    (Service::MoneyTransfer, Operation::Send, tkey.as_str()),
                    (Service::MoneyTransfer, Operation::Send, "999999999"),
                ],
            )
            .await
            .expect("recover_entries");
        let lost_state =
            support::state_of(&j, Service::MoneyTransfer, Operation::Send, &lkey).await;
        let third_state =
            support::state_of(&j, Service::MoneyTransfer, Operation::Send, &tkey).await;
        if r.taken_from_dead != 1
            || lost_state != State::Accepted
            || transfers_with(&sb, lost.request_id().get()) != 1
            || transfers_with(&sb, third.request_id().get()) != 0
            || third_state != State::Refused
            || sb.transfers().len() != before + 1
        {
            lies.push(format!(
                "{place:?}: lost {lost_state} ({} transfers), abandoned {third_state} ({} transfers), {} sent: {r:?}",
                transfers_with(&sb, lost.request_id().get()),
                transfers_with(&sb, third.request_id().get()),
                sb.transfers().len() - before
            ));
        }
    }
    tell(lies);
}

/// `recover` now says it lists every entry held
/// elsewhere, "never hidden", and `all_final()` is "every entry of the journal that was open is
/// final now". An open entry whose row this version cannot read (its outcome is not JSON) and which
/// another live process (another host, an hour left on its lease) holds is skipped from
/// `held_elsewhere` (`let Ok(entry) = held.entry else { continue }`) and is in no other list: the
/// report says all final while that process may be sending it.
#[tokio::test]
async fn an_unreadable_entry_held_elsewhere_is_not_hidden() {
    let mut lies = Vec::new();
    for place in places("held-unreadable").await {
        let sb = sandbox().await;
        let j = place.open().await;
        let t = j.transfer(transfer(&sb, 0));
        let p = t
            .client()
            .prepare_send(support::cash_send(12))
            .expect("prepare");
        sb.inject(
            whish_sandbox::Endpoint::TransferSend,
            whish_sandbox::Fault::DropRequest,
            1,
        );
        let _ = t.send(&p).await.expect_err("dropped");
        let key = p.request_id().to_string();
        let n = journal_sql(
            &place,
            &format!(
                "UPDATE whish_journal_entries SET outcome = '{{not json', \
                 lease_owner = 'host=elsewhere.example pid=1 start=1 id=live', \
                 lease_until_ms = (SELECT MAX(updated_ms) FROM whish_journal_entries) + 3600000 \
                 WHERE idem_key = '{key}'"
            ),
        )
        .await;
        assert_eq!(n, 1, "setup");
        let r = j
            .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
            .await
            .expect("recover");
        if r.all_final() {
            lies.push(format!(
                "{place:?}: an open entry another live process holds, its row unreadable, and the report says all final: {r:?}"
            ));
        }
    }
    tell(lies);
}

/// Held up (expected): prune keeps an entry a person abandoned on both backends (the outcome's
/// JSON text matched with LIKE: PostgreSQL's text must read the same as SQLite's).
#[tokio::test]
async fn prune_keeps_an_abandoned_entry_on_every_backend() {
    let mut lies = Vec::new();
    for place in places("prune-abandoned").await {
        let sb = sandbox().await;
        let j = place.open().await;
        let (lost, _) = lost_and_applied_for_the_operator(&sb, &j, 20, 21).await;
        let key = lost.request_id().to_string();
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
        assert!(
            matches!(done, Abandoned::Recorded { .. }),
            "setup: {done:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        let _ = j.prune(Duration::ZERO).await.expect("prune");
        let kept = j
            .entry(Service::MoneyTransfer, Operation::Send, &key)
            .await
            .expect("read");
        if kept.is_none() {
            lies.push(format!("{place:?}: the abandoned entry was pruned"));
        }
    }
    tell(lies);
}

/// Held up: two processes (two journals, two owners) abandon the same lost send at once, each
/// status read slowed. Exactly one records it; the other says another holds it (or that it is
/// final now), never `Recorded` twice, never a write over the first; the entry is refused,
/// abandoned, and nothing is sent.
#[tokio::test]
async fn two_processes_abandoning_one_entry_record_it_once() {
    let mut lies = Vec::new();
    for place in places("abandon-race").await {
        let sb = sandbox().await;
        let j1 = place.open().await;
        let j2 = place.open().await;
        let (lost, _applied) = support::lost_and_applied_for_the_operator(&sb, &j1, 41, 42).await;
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
        let entry = support::entry_of(&j1, Service::MoneyTransfer, Operation::Send, &key).await;
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
    for place in places("abandon-deducted").await {
        let sb = sandbox().await;
        let j = place.open().await;
        let t = j.transfer(transfer(&sb, 0));
        let p = t
            .client()
            .prepare_send(support::cash_send_fee_deducted(50))
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
        let state = support::state_of(&j, Service::MoneyTransfer, Operation::Send, &key).await;
        if !matches!(done, Abandoned::Received { .. }) || state != State::NeedsOperator {
            lies.push(format!("{place:?}: {done:?}, entry {state}"));
        }
    }
    tell(lies);
}
