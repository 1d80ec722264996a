//! Every entry records the service it was meant for (base URL and account fingerprint, never a
//! secret). Recovery, a resend and abandon through a client of another service or account leave
//! it untouched and open: a sandbox's entry is never sent with production settings, one
//! account's never sent in another. On SQLite and (with WHISH_TEST_POSTGRES_URL) on PostgreSQL.

use crate::support::{abandon_send, cash_send, lost_and_applied_for_the_operator, places, sandbox};
use crate::support::{transfer, transfers_with};
use whish_journal::{Abandoned, Clients, Recovery, State};
use whish_money_transfer::PreparedTransfer;
use whish_sandbox::{Endpoint, Fault, Sandbox};

/// A send through `j` to `sb` whose reply is lost: the transfer exists, the entry stays open.
async fn lost_send(j: &whish_journal::Journal, sb: &Sandbox, dollars: i64) -> PreparedTransfer {
    let t = j.transfer(transfer(sb, 0));
    let prepared = t
        .client()
        .prepare_send(cash_send(dollars))
        .expect("prepare");
    sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
    assert!(t.send(&prepared).await.expect_err("lost").outcome_unknown());
    // Its outcome and the lease's release are written behind the call: on disk before another
    // process looks (otherwise a loaded machine shows the entry still held by this one).
    j.flush().await;
    prepared
}

/// A send left open against one sandbox (its reply lost: the transfer exists there) is met by a
/// recovery whose settings name another sandbox: nothing reaches the other one, the entry is
/// listed as another service's and stays open, and the recovery is not all final. A recovery
/// with the entry's own settings then settles it: one transfer, where it was meant.
#[tokio::test]
async fn recovery_with_another_services_settings_sends_nothing_there() {
    for place in places("other_service_recovery").await {
        let meant = sandbox().await;
        let other = sandbox().await;
        let j = place.open().await;
        let prepared = lost_send(&j, &meant, 21).await;
        let id = prepared.request_id().get();
        assert_eq!(transfers_with(&meant, id), 1, "{place:?}: setup");

        let report = place
            .open()
            .await
            .recover(
                &Clients::new().transfer(transfer(&other, 0)),
                &Recovery::new(),
            )
            .await
            .expect("recover");
        let sent_there = other
            .requests()
            .iter()
            .filter(|r| r.endpoint == Endpoint::TransferSend)
            .count();
        assert_eq!(sent_there, 0, "{place:?}: sent to another service");
        assert_eq!(transfers_with(&other, id), 0, "{place:?}");
        assert_eq!(report.other_service.len(), 1, "{place:?}: {report:?}");
        let o = &report.other_service[0];
        assert_eq!(o.key, id.to_string());
        assert!(o.recorded.starts_with(&meant.transfer_base_url()), "{o:?}");
        assert!(o.current.starts_with(&other.transfer_base_url()), "{o:?}");
        assert!(
            !report.all_final(),
            "{place:?}: an entry left open is not final"
        );
        let entry = j
            .find(&id.to_string())
            .await
            .expect("find")
            .pop()
            .expect("entry");
        assert!(entry.state.is_open(), "{place:?}: {:?}", entry.state);

        let report = j
            .recover(
                &Clients::new().transfer(transfer(&meant, 0)),
                &Recovery::new(),
            )
            .await
            .expect("recover");
        assert!(report.all_final(), "{place:?}: {report:?}");
        assert_eq!(transfers_with(&meant, id), 1, "{place:?}: one transfer");
        assert_eq!(transfers_with(&other, id), 0, "{place:?}");
        let entry = j
            .find(&id.to_string())
            .await
            .expect("find")
            .pop()
            .expect("entry");
        assert_eq!(entry.state, State::Accepted, "{place:?}");
        j.close().await;
    }
}

/// The same prepared send, resent through a journaled client of another service: this call
/// sends nothing, says the outcome is unknown (it may have been sent where it was meant), and
/// leaves the entry as it was.
#[tokio::test]
async fn a_resend_through_another_services_client_sends_nothing() {
    for place in places("other_service_resend").await {
        let meant = sandbox().await;
        let other = sandbox().await;
        let j = place.open().await;
        let prepared = lost_send(&j, &meant, 22).await;

        let wrong = j.transfer(transfer(&other, 0));
        let err = wrong.send(&prepared).await.expect_err("refused here");
        assert!(err.outcome_unknown(), "{place:?}: {err}");
        assert!(
            !err.nothing_sent(),
            "{place:?}: it may have been sent where it was meant"
        );
        assert!(err.to_string().contains("another service"), "{err}");
        assert!(
            other.requests().is_empty(),
            "{place:?}: nothing reaches the other service"
        );
        let entry = j
            .find(&prepared.request_id().to_string())
            .await
            .expect("find")
            .pop()
            .expect("entry");
        assert!(entry.state.is_open(), "{place:?}: {:?}", entry.state);
        j.close().await;
    }
}

/// A person abandoning an entry waiting for the operator with another service's client: the
/// check there would prove nothing (no transfer under that Request-id at the wrong service), so
/// nothing is closed.
#[tokio::test]
async fn abandon_with_another_services_client_closes_nothing() {
    for place in places("other_service_abandon").await {
        let meant = sandbox().await;
        let other = sandbox().await;
        let j = place.open().await;
        let (_lost, applied) = lost_and_applied_for_the_operator(&meant, &j, 23, 24).await;
        let key = applied.request_id().to_string();
        let answer = abandon_send(
            &j,
            &Clients::new().transfer(transfer(&other, 0)),
            &key,
            "not to be paid",
        )
        .await;
        assert!(
            matches!(&answer, Abandoned::Unchecked { why } if why.contains("another service")),
            "{place:?}: {answer:?}"
        );
        let entry = j.find(&key).await.expect("find").pop().expect("entry");
        assert_eq!(entry.state, State::NeedsOperator, "{place:?}");
        j.close().await;
    }
}

/// An entry written before 0.4 records no service: nothing tells a sandbox's old entry from
/// production's, so recovery leaves it open and lists it as another service's, until a person
/// says it is this service's (`Clients::adopt_untargeted`); then it is settled, once.
#[tokio::test]
async fn an_entry_that_records_no_service_waits_for_a_persons_word() {
    for place in places("other_service_untargeted").await {
        let sb = sandbox().await;
        let j = place.open().await;
        let prepared = lost_send(&j, &sb, 25).await;
        let id = prepared.request_id().get();
        let key = id.to_string();
        let changed = crate::support::journal_sql(
            &place,
            &format!("UPDATE whish_journal_entries SET target = NULL WHERE idem_key = '{key}'"),
        )
        .await;
        assert_eq!(changed, 1, "setup: an entry as 0.3 wrote it");

        let report = j
            .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
            .await
            .expect("recover");
        assert_eq!(report.other_service.len(), 1, "{place:?}: {report:?}");
        assert_eq!(report.other_service[0].recorded, whish_journal::UNTARGETED);
        assert!(!report.all_final());
        let sends = sb
            .requests()
            .iter()
            .filter(|r| r.endpoint == Endpoint::TransferSend)
            .count();
        assert_eq!(
            sends, 1,
            "{place:?}: nothing sent again without a person's word"
        );

        let report = j
            .recover(
                &Clients::new()
                    .transfer(transfer(&sb, 0))
                    .adopt_untargeted(true),
                &Recovery::new(),
            )
            .await
            .expect("recover");
        assert!(report.all_final(), "{place:?}: {report:?}");
        assert_eq!(transfers_with(&sb, id), 1, "{place:?}: one transfer");
        j.close().await;
    }
}

/// A transfer reserved through one account's client and sent through another's: this call
/// sends nothing (its entry names the first), says the outcome is unknown, and the entry stays
/// open for the client it was reserved with.
#[tokio::test]
async fn a_reservation_sent_through_another_services_client_sends_nothing() {
    for place in places("other_service_reserved").await {
        let meant = sandbox().await;
        let other = sandbox().await;
        let j = place.open().await;
        let t = j.transfer(transfer(&meant, 0));
        let prepared = t.client().prepare_send(cash_send(26)).expect("prepare");
        let mut reserved = t.reserve(vec![prepared.clone()]).await;
        let wrong = j.transfer(transfer(&other, 0));
        let err = wrong
            .send_reserved(reserved.remove(0))
            .await
            .expect_err("not sent here");
        assert!(
            err.outcome_unknown() && !err.nothing_sent(),
            "{place:?}: {err}"
        );
        assert!(
            other.requests().is_empty(),
            "{place:?}: nothing reaches the other service"
        );
        assert!(
            meant.requests().is_empty(),
            "{place:?}: nor the one it was meant for"
        );
        let entry = j
            .find(&prepared.request_id().to_string())
            .await
            .expect("find")
            .pop()
            .expect("entry");
        assert!(entry.state.is_open(), "{place:?}: {:?}", entry.state);
        j.close().await;
    }
}
