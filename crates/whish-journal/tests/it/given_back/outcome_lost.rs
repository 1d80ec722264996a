//! A reservation given back (refused, `not-sent`) and then sent as a first send.
//! While that send is in flight and until its outcome lands, the entry stays `refused`
//! (`not-sent`), a FINAL state: recovery never looks at it, and a later send reads it as "never
//! left" and sends it as a FIRST send, which meets `transfer.already.done` and is told (and
//! recorded) as a REFUSAL although the transfer exists.

use crate::support;

use std::time::Duration;

use crate::support::{LEASE, cash_send, places, sandbox, transfer, transfers_with};
use whish_journal::{Clients, Journal, Operation, Recovery, Service, State, Unreserved};

/// Process A: reserve, give back, then send as a first send (accepted), and die right after the
/// call returns (its runtime dropped: the outcome, still lingering in the writer, never lands).
fn process_a_sends_and_dies(
    url: String,
    base: String,
    sb_user: String,
    sb_key: String,
    dollars: i64,
) -> i64 {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let (journal, id) = rt.block_on(async move {
        let journal = Journal::builder(&url)
            .lease(LEASE)
            .open()
            .await
            .expect("open");
        let client = client_at(&base, &sb_user, &sb_key);
        let t = journal.transfer(client);
        let p = t
            .client()
            .prepare_send(cash_send(dollars))
            .expect("prepare");
        let id = p.request_id();
        let r = t.reserve(vec![p.clone()]).await.pop().expect("one");
        assert_eq!(
            t.unreserve(r).await.expect("given back"),
            Unreserved::NeverSent
        );
        // The next run of the batch sends it: accepted.
        let _ = t.send(&p).await.expect("accepted");
        (journal, id.get())
    });
    // Killed right after the call returned: the runtime (and the journal's writer) go away.
    drop(rt);
    std::mem::forget(journal);
    id
}

fn client_at(base: &str, user: &str, key: &str) -> whish_money_transfer::TransferClient {
    use whish_core::{ClientSettings, SecretString};
    whish_money_transfer::TransferClient::builder(
        ClientSettings::new(base).policy(support::policy(0)),
    )
    .username(user.to_owned())
    .key(SecretString::from(key.to_owned()))
    .build()
    .expect("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_back_send_whose_outcome_is_lost_is_later_reported_refused_though_it_was_paid() {
    let place = places("adv-given-back").await.remove(0);
    let sb = sandbox().await;
    let c = sb.transfer_credentials();
    let (url, base, user, key) = (
        place.url().to_owned(),
        sb.transfer_base_url(),
        c.username.clone(),
        c.key.clone(),
    );
    let id =
        tokio::task::spawn_blocking(move || process_a_sends_and_dies(url, base, user, key, 77))
            .await
            .expect("process A");
    assert_eq!(transfers_with(&sb, id), 1, "process A's transfer exists");

    // Another process, after A's lease ran out.
    tokio::time::sleep(LEASE * 2).await;
    let b = place.open().await;
    let e = b
        .entry(Service::MoneyTransfer, Operation::Send, &id.to_string())
        .await
        .expect("read")
        .expect("there");
    eprintln!("entry after A died: {:?} {:?}", e.state, e.outcome);
    // Recovery does not look at it (it is final as far as it knows).
    let report = b
        .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
        .await
        .expect("recover");
    eprintln!("recovery: {report:?}");
    // The batch runs again: the same request, prepared anew under its Request-id.
    let t = b.transfer(transfer(&sb, 0));
    let again = t
        .client()
        .prepare_send(cash_send(77).request_id(whish_core::RequestId::new(id).expect("id")))
        .expect("prepare");
    let answer = t.send(&again).await;
    eprintln!("answer: {answer:?}");
    let e = b
        .entry(Service::MoneyTransfer, Operation::Send, &id.to_string())
        .await
        .expect("read")
        .expect("there");
    eprintln!("entry now: {:?} {:?}", e.state, e.outcome);
    assert_eq!(transfers_with(&sb, id), 1, "one transfer");
    // The transfer exists: the journal and the answer must not say it was refused.
    assert!(
        !matches!(&answer, Err(err) if err.is_refused()),
        "a paid transfer reported REFUSED: {answer:?}"
    );
    assert_ne!(
        e.state,
        State::Refused,
        "a paid transfer recorded refused: {e:?}"
    );
    let _ = Duration::ZERO;
    b.close().await;
}
