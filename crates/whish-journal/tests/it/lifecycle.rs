//! The journal against the sandbox, on SQLite and on PostgreSQL: each crash point ends in one
//! transfer, each operation recovers with its own key, refusals stay final, leases keep two
//! recovering processes apart, and status changes are handed on once.

use crate::support;

use std::time::Duration;

use crate::support::{
    Place, cash_send, collect, lost_and_applied_for_the_operator, payment, places, sandbox,
    state_of, topup, transfer, transfers_with,
};
use whish_core::{Currency, RequestId};
use whish_journal::{Clients, Journal, Operation, Recovery, Service, State};
use whish_sandbox::{Endpoint, Fault};

/// Recover on a journal opened anew (as a restarted process), after the leases of the
/// "crashed" one have expired.
async fn restart_and_recover(place: &Place, clients: &Clients) -> whish_journal::RecoveryReport {
    tokio::time::sleep(support::LEASE * 2).await;
    let journal = place.open().await;
    let report = journal
        .recover(clients, &Recovery::new())
        .await
        .expect("recover");
    journal.close().await;
    report
}

#[tokio::test]
async fn each_crash_point_of_a_send_ends_in_exactly_one_transfer() {
    for place in places("crash_points").await {
        let sb = sandbox().await;
        // Every call goes through one relay, so that every entry records one base URL.
        let relay = whish_testkit::Relay::start(sb.addr(), whish_testkit::RelayMode::Hole).await;
        let url = sb
            .transfer_base_url()
            .replace(&sb.addr().to_string(), &relay.addr().to_string());
        let clients = Clients::new().transfer(support::transfer_at(&url, &sb, 0));

        // 1. Crash after recording, before the request left: the journal sends through a
        //    relay that never answers, and the process dies (the task is aborted).
        let journal = place.open().await;
        let stuck = journal.transfer(support::transfer_at(&url, &sb, 0));
        let before = stuck.client().prepare_send(cash_send(10)).expect("prepare");
        let id_before = before.request_id();
        let task = tokio::spawn(async move { stuck.send(&before).await });
        support::until_entry(
            &journal,
            Service::MoneyTransfer,
            Operation::Send,
            &id_before.to_string(),
        )
        .await;
        task.abort();
        assert_eq!(
            state_of(
                &journal,
                Service::MoneyTransfer,
                Operation::Send,
                &id_before.to_string()
            )
            .await,
            State::Intended
        );
        assert_eq!(transfers_with(&sb, id_before.get()), 0, "nothing arrived");
        journal.close().await;
        relay.set(whish_testkit::RelayMode::Forward);

        // 2. Crash after the request arrived, before the reply: the sandbox holds the reply,
        //    the process dies.
        let journal = place.open().await;
        sb.inject(
            Endpoint::TransferSend,
            Fault::Delay(Duration::from_secs(5)),
            1,
        );
        let live = journal.transfer(support::transfer_at(&url, &sb, 0));
        let mid = live.client().prepare_send(cash_send(11)).expect("prepare");
        let id_mid = mid.request_id();
        let task = tokio::spawn(async move { live.send(&mid).await });
        while transfers_with(&sb, id_mid.get()) == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        task.abort();
        journal.close().await;

        // 3. Crash after the reply, before its outcome was recorded: the row is left exactly
        //    as such a crash leaves it (intended, leased by a dead process).
        let journal = place.open().await;
        let j3 = journal.transfer(support::transfer_at(&url, &sb, 0));
        let after = j3.client().prepare_send(cash_send(12)).expect("prepare");
        let id_after = after.request_id();
        let _ = j3.send(&after).await.expect("sent");
        forget_outcome(&place, &id_after.to_string()).await;
        journal.close().await;

        let report = restart_and_recover(&place, &clients).await;
        assert_eq!(report.examined, 3, "{report:?}");
        assert!(report.all_final(), "{report:?}");
        let journal = place.open().await;
        for id in [id_before, id_mid, id_after] {
            assert_eq!(transfers_with(&sb, id.get()), 1, "one transfer for {id}");
            let e = journal
                .entry(Service::MoneyTransfer, Operation::Send, &id.to_string())
                .await
                .expect("read")
                .expect("entry");
            assert_eq!(e.state, State::Accepted, "{e:?}");
            assert!(e.references.ltn_number.is_some(), "{e:?}");
        }
        // Recovery again finds nothing open.
        let again = journal
            .recover(&clients, &Recovery::new())
            .await
            .expect("recover");
        assert_eq!(again.examined, 0);
        assert_eq!(sb.transfers().len(), 3, "no other transfer was made");
    }
}

/// Put an entry back the way a crash between the reply and its recording leaves it.
async fn forget_outcome(place: &Place, key: &str) {
    const SQL: &str = "UPDATE whish_journal_entries SET state = 'intended', outcome = NULL, \
        refs = NULL, lease_owner = 'a-dead-process', lease_until_ms = 0 WHERE idem_key = $1";
    match place {
        Place::Sqlite(url) => {
            let pool = sqlx::SqlitePool::connect(url).await.expect("sqlite");
            sqlx::query(SQL)
                .bind(key)
                .execute(&pool)
                .await
                .expect("update");
            pool.close().await;
        }
        Place::Postgres(url) => {
            let pool = sqlx::PgPool::connect(url).await.expect("postgres");
            sqlx::query(SQL)
                .bind(key)
                .execute(&pool)
                .await
                .expect("update");
            pool.close().await;
        }
    }
}

#[tokio::test]
async fn every_money_moving_operation_recovers_with_its_own_key() {
    for place in places("operations").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let (t, c, u) = (
            journal.transfer(transfer(&sb, 0)),
            journal.collect(collect(&sb, 0)),
            journal.topup(topup(&sb, 0)),
        );

        // A send, then a cancel whose reply is dropped after it was applied.
        let send = t.client().prepare_send(cash_send(20)).expect("prepare");
        let sent = t.send(&send).await.expect("sent");
        let ltn = sent.ltn_number().expect("ltn").to_owned();
        let cancel = t
            .client()
            .prepare_cancel(&ltn, Some("journal test"))
            .expect("prepare");
        sb.inject(Endpoint::TransferCancel, Fault::DropReply, 1);
        assert!(
            t.cancel(&cancel)
                .await
                .expect_err("dropped")
                .outcome_unknown()
        );

        // A payment whose create reply is dropped; a paid one whose refund reply is dropped.
        sb.inject(Endpoint::CollectCreate, Fault::DropReply, 1);
        let lost_create = c.client().prepare_payment(payment(1500)).expect("prepare");
        assert!(
            c.create_payment(&lost_create)
                .await
                .expect_err("dropped")
                .outcome_unknown()
        );
        let paid = c.client().prepare_payment(payment(2500)).expect("prepare");
        c.create_payment(&paid).await.expect("created");
        sb.pay_link(paid.external_id().as_str())
            .await
            .expect("paid");
        let refund = c
            .client()
            .prepare_refund(Currency::Usd, paid.external_id(), Some("returned"))
            .expect("prepare");
        sb.inject(Endpoint::CollectRefund, Fault::DropReply, 1);
        assert!(
            c.refund(&refund)
                .await
                .expect_err("dropped")
                .outcome_unknown()
        );

        // A top-up payment answered Pending.
        let offer = u
            .client()
            .fetch_options(
                whish_intl_topup::ProviderId::new("etisalat-ae"),
                "+971501234567",
            )
            .await
            .expect("options");
        let pay = u
            .client()
            .prepare_pay(&offer.options()[0])
            .expect("prepare");
        sb.inject(Endpoint::TopupPay, Fault::Pending, 1);
        assert!(u.pay(&pay).await.expect_err("pending").is_pending());

        let open = journal
            .list(&whish_journal::Listing::new().open().limit(100))
            .await
            .expect("list");
        assert_eq!(open.len(), 4, "{open:#?}");
        journal.close().await;

        let clients = Clients::new()
            .transfer(transfer(&sb, 0))
            .collect(collect(&sb, 0))
            .topup(topup(&sb, 0));
        let report = restart_and_recover(&place, &clients).await;
        assert_eq!(report.changes.len(), 4, "{report:#?}");
        assert!(
            report.changes.iter().all(|c| c.to == State::Accepted),
            "{report:#?}"
        );

        let journal = place.open().await;
        assert!(
            journal
                .list(&whish_journal::Listing::new().open().limit(100))
                .await
                .expect("list")
                .is_empty()
        );
        // The service's records: one of each, nothing twice.
        let transfer = sb
            .transfers()
            .into_iter()
            .find(|r| r.ltn_number == ltn)
            .expect("t");
        assert_eq!(transfer.status, "CANCELED_FULL");
        let payments = sb.payments();
        assert_eq!(payments.len(), 2);
        let refunded = payments
            .iter()
            .find(|p| p.external_id == paid.external_id().as_str());
        assert_eq!(refunded.expect("paid").collect_status, "refunded");
        let sales = sb.sales();
        assert_eq!(sales.len(), 1, "one sale, not two");
        let pay_entry = journal
            .entry(
                Service::IntlTopup,
                Operation::Pay,
                pay.external_id().as_str(),
            )
            .await
            .expect("read")
            .expect("entry");
        assert_eq!(
            pay_entry.references.sold_item_ids,
            [sales[0].transaction_id.clone()]
        );
        assert_eq!(pay_entry.context.as_deref(), Some("etisalat-ae"));
    }
}

#[tokio::test]
async fn a_pending_send_is_followed_up_with_status_not_resent() {
    for place in places("pending").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let send = t.client().prepare_send(cash_send(30)).expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::Pending, 1);
        assert!(t.send(&send).await.expect_err("pending").is_pending());
        let key = send.request_id().to_string();
        assert_eq!(
            state_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await,
            State::Pending
        );
        let report = journal
            .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
            .await
            .expect("recover");
        assert_eq!(report.changes.len(), 1);
        assert_eq!(report.changes[0].outcome.result, "confirmed");
        let sends = sb
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/woo/send/money"))
            .count();
        assert_eq!(sends, 1, "the create was not sent again");
        assert_eq!(transfers_with(&sb, send.request_id().get()), 1);
    }
}

#[tokio::test]
async fn a_refusal_is_final_and_a_reused_key_is_refused_before_sending() {
    for place in places("refusals").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        // The sandbox refuses more than the account's balance.
        let huge = t
            .client()
            .prepare_send(cash_send(5_000_000))
            .expect("prepare");
        let refused = t.send(&huge).await.expect_err("refused");
        assert!(refused.code().is_some(), "{refused:?}");
        let key = huge.request_id().to_string();
        let entry = journal
            .entry(Service::MoneyTransfer, Operation::Send, &key)
            .await
            .expect("read")
            .expect("entry");
        assert_eq!(entry.state, State::Refused);
        assert_eq!(
            entry.outcome.as_ref().and_then(|o| o.code.clone()),
            Some(refused.code().expect("code").as_str().to_owned())
        );
        let report = journal
            .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
            .await
            .expect("recover");
        assert_eq!(report.examined, 0, "a refusal is final");

        // The same Request-id for another transfer: refused by the journal, nothing sent.
        let other = t
            .client()
            .prepare_send(cash_send(40).request_id(huge.request_id()))
            .expect("prepare");
        let before = sb.requests().len();
        let e = t.send(&other).await.expect_err("reused key");
        assert!(
            e.nothing_sent() && matches!(e, whish_core::Error::Record(_)),
            "{e:?}"
        );
        assert!(e.to_string().contains("different request"), "{e}");
        assert_eq!(sb.requests().len(), before, "nothing was sent");

        // Nothing was sent because the service was not reachable: final, nothing done.
        let closed = journal.transfer(support::transfer_at("http://127.0.0.1:9/api", &sb, 0));
        let unsent = closed
            .client()
            .prepare_send(cash_send(41))
            .expect("prepare");
        assert!(
            closed
                .send(&unsent)
                .await
                .expect_err("closed")
                .nothing_sent()
        );
        assert_eq!(
            state_of(
                &journal,
                Service::MoneyTransfer,
                Operation::Send,
                &unsent.request_id().to_string()
            )
            .await,
            State::Refused
        );
    }
}

#[tokio::test]
async fn an_entry_still_open_after_its_deadline_goes_to_the_operator() {
    for place in places("deadline").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let send = t.client().prepare_send(cash_send(50)).expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
        assert!(t.send(&send).await.expect_err("dropped").outcome_unknown());
        // The service cannot be reached now (its connection drops before it reads the request):
        // the entry stays open, then goes to the operator.
        let unreachable = Clients::new().transfer(transfer(&sb, 0));
        sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
        let report = journal
            .recover(&unreachable, &Recovery::new())
            .await
            .expect("recover");
        assert_eq!(
            (report.still_open, report.unreachable),
            (1, 1),
            "{report:?}"
        );
        let report = journal
            .recover(&unreachable, &Recovery::new().deadline(Duration::ZERO))
            .await
            .expect("recover");
        assert_eq!(report.needs_operator, 1, "{report:?}");
        let key = send.request_id().to_string();
        assert_eq!(
            state_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await,
            State::NeedsOperator
        );
        // Listed as open for a person to see; never pruned.
        assert_eq!(
            journal
                .list(&whish_journal::Listing::new().open().limit(10))
                .await
                .expect("list")
                .len(),
            1
        );
        assert_eq!(journal.prune(Duration::ZERO).await.expect("prune"), 0);
        assert_eq!(transfers_with(&sb, send.request_id().get()), 0);

        // Past its deadline with the service reachable: the deadline is checked before the
        // resend, so it goes to the operator and nothing is sent (0.2 sent it, then decided).
        let late = t.client().prepare_send(cash_send(51)).expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
        assert!(t.send(&late).await.expect_err("dropped").outcome_unknown());
        let before = sb.requests().len();
        let report = journal
            .recover(
                &Clients::new().transfer(transfer(&sb, 0)),
                &Recovery::new().deadline(Duration::ZERO),
            )
            .await
            .expect("recover");
        assert_eq!(report.needs_operator, 1, "{report:?}");
        assert_eq!(sb.requests().len(), before, "nothing was sent");
        assert_eq!(transfers_with(&sb, late.request_id().get()), 0);
    }
}

/// A send whose fee is deducted is listed in the activity log with the amount the receiver
/// collects (the amount sent less the fee) and a total equal to the amount sent: recovery's
/// check that the transfer under the Request-id is this one must read it so, or it never
/// confirms the caller's own transfer.
#[tokio::test]
async fn a_pending_send_with_its_fee_deducted_is_confirmed_by_recovery() {
    for place in places("pending-deducted").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let send = t
            .client()
            .prepare_send(support::cash_send_fee_deducted(80))
            .expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::Pending, 1);
        assert!(t.send(&send).await.expect_err("pending").is_pending());
        // And one applied with its reply lost: its resend meets `transfer.already.done`.
        let lost = t
            .client()
            .prepare_send(support::cash_send_fee_deducted(81))
            .expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
        assert!(t.send(&lost).await.expect_err("dropped").outcome_unknown());
        let report = journal
            .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
            .await
            .expect("recover");
        for p in [&send, &lost] {
            let key = p.request_id().to_string();
            assert_eq!(
                state_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await,
                State::Accepted,
                "{report:?}"
            );
            assert_eq!(transfers_with(&sb, p.request_id().get()), 1);
        }
        assert!(report.all_final(), "{report:?}");
    }
}

#[tokio::test]
async fn an_entry_waiting_for_the_operator_is_settled_when_a_person_asks() {
    for place in places("retry-operator").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        // One send never arrived, the other was applied and its reply lost; both wait for
        // the operator.
        let (lost, applied) = lost_and_applied_for_the_operator(&sb, &journal, 70, 71).await;
        let clients = Clients::new().transfer(transfer(&sb, 0));
        let before = sb.requests().len();

        // Without the person's word nothing moves, and nothing is sent.
        let report = journal
            .recover(&clients, &Recovery::new())
            .await
            .expect("recover");
        assert_eq!(report.examined, 0, "{report:?}");
        // With it, but past the deadline given: still nothing.
        let report = journal
            .recover(
                &clients,
                &Recovery::new()
                    .retry_needs_operator(true)
                    .deadline(Duration::ZERO),
            )
            .await
            .expect("recover");
        assert!(report.changes.is_empty(), "{report:?}");
        assert_eq!(sb.requests().len(), before, "nothing was sent");
        for p in [&lost, &applied] {
            let key = p.request_id().to_string();
            assert_eq!(
                state_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await,
                State::NeedsOperator
            );
        }

        // Within the deadline: each is read by status first; the one the service holds is
        // confirmed without a send, the one it never received is sent with its own key.
        let report = journal
            .recover(&clients, &Recovery::new().retry_needs_operator(true))
            .await
            .expect("recover");
        assert_eq!(report.changes.len(), 2, "{report:?}");
        assert!(report.all_final(), "{report:?}");
        for p in [&lost, &applied] {
            let key = p.request_id().to_string();
            assert_eq!(
                state_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await,
                State::Accepted
            );
            assert_eq!(transfers_with(&sb, p.request_id().get()), 1, "paid once");
        }
        let sends = sb
            .requests()
            .iter()
            .skip(before)
            .filter(|r| r.endpoint == Endpoint::TransferSend)
            .count();
        assert_eq!(sends, 1, "only the transfer that never arrived was sent");
    }
}

#[tokio::test]
async fn two_recovering_processes_never_work_on_the_same_entry() {
    for place in places("leases").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let mut ids = Vec::new();
        for n in 0..12 {
            let send = t.client().prepare_send(cash_send(60 + n)).expect("prepare");
            sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
            assert!(t.send(&send).await.expect_err("dropped").outcome_unknown());
            ids.push(send.request_id());
        }
        journal.close().await;
        let clients = Clients::new().transfer(transfer(&sb, 0));
        // Exclusive claims are the subject, not leases running out under load.
        let (a, b) = (place.open_steady().await, place.open_steady().await);
        let options = Recovery::new().batch(2);
        let (ra, rb) = tokio::join!(a.recover(&clients, &options), b.recover(&clients, &options));
        let (ra, rb) = (ra.expect("a"), rb.expect("b"));
        assert_eq!(
            ra.examined + rb.examined,
            12,
            "each entry worked once: {ra:?} {rb:?}"
        );
        let mut keys: Vec<_> = ra
            .changes
            .iter()
            .chain(&rb.changes)
            .map(|c| c.key.clone())
            .collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 12);
        for id in ids {
            assert_eq!(transfers_with(&sb, id.get()), 1);
        }
    }
}

#[tokio::test]
async fn a_status_change_is_handed_on_once_across_processes() {
    use whish_money_transfer::TransferStatus;
    for place in places("status_changes").await {
        let (a, b) = (place.open().await, place.open().await);
        let id = RequestId::new(77).expect("id");
        let mut tasks = Vec::new();
        for n in 0..8 {
            let j = if n % 2 == 0 { a.clone() } else { b.clone() };
            tasks.push(tokio::spawn(async move {
                j.observe_status("T-77", id, &TransferStatus::Received)
                    .await
            }));
        }
        let mut handed = Vec::new();
        for t in tasks {
            handed.extend(t.await.expect("task").expect("observe"));
        }
        assert_eq!(handed.len(), 1, "one of eight deliveries is a change");
        a.complete_change(&handed[0]).await.expect("complete");
        // A restart remembers a delivered change.
        let c = place.open().await;
        assert!(
            c.observe_status("T-77", id, &TransferStatus::Received)
                .await
                .expect("o")
                .is_none()
        );
        // A handler that failed releases its claim: the next sighting hands it on again.
        let next = c
            .observe_status("T-77", id, &TransferStatus::CanceledFull)
            .await
            .expect("o")
            .expect("a change");
        assert_eq!(next.from, Some(TransferStatus::Received));
        c.forget_change(&next).await.expect("forget");
        let again = c
            .observe_status("T-77", id, &TransferStatus::CanceledFull)
            .await
            .expect("o")
            .expect("handed on again");
        // A handler that died with its claim: not handed on while the claim is fresh, handed on
        // again once the lease has passed; never again once completed.
        assert!(
            b.observe_status("T-77", id, &TransferStatus::CanceledFull)
                .await
                .expect("o")
                .is_none()
        );
        tokio::time::sleep(support::LEASE * 2).await;
        let reclaimed = b
            .observe_status("T-77", id, &TransferStatus::CanceledFull)
            .await
            .expect("o")
            .expect("reclaimed after the lease");
        assert_eq!(reclaimed.transfer_id, again.transfer_id);
        b.complete_change(&reclaimed).await.expect("complete");
        tokio::time::sleep(support::LEASE * 2).await;
        assert!(
            c.observe_status("T-77", id, &TransferStatus::CanceledFull)
                .await
                .expect("o")
                .is_none()
        );
    }
}

#[tokio::test]
async fn prune_keeps_open_entries_and_the_journal_keeps_no_secret() {
    for place in places("prune").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let u = journal.topup(topup(&sb, 0));
        let done = t.client().prepare_send(cash_send(70)).expect("prepare");
        let _ = t.send(&done).await.expect("sent");
        let offer = u
            .client()
            .fetch_options(
                whish_intl_topup::ProviderId::new("gift-voucher"),
                "buyer@example.com",
            )
            .await
            .expect("o");
        let pay = u
            .client()
            .prepare_pay(&offer.options()[0])
            .expect("prepare");
        let paid = u.pay(&pay).await.expect("paid");
        let open = t.client().prepare_send(cash_send(71)).expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
        assert!(t.send(&open).await.is_err());

        // No credential and no PIN anywhere in what the journal holds.
        let pins: Vec<String> = match paid {
            whish_intl_topup::PayOutcome::Paid(p) => p
                .sold_items()
                .iter()
                .filter_map(|i| i.pin().map(|p| p.expose().to_owned()))
                .collect(),
            other => panic!("{other:?}"),
        };
        assert!(!pins.is_empty(), "the sandbox sells PINs");
        let everything = serde_json::to_string(
            &journal
                .list(&whish_journal::Listing::new().limit(100))
                .await
                .expect("list"),
        )
        .expect("json")
            + &journal
                .list(&whish_journal::Listing::new().limit(100))
                .await
                .expect("list")
                .iter()
                .map(|e| String::from_utf8_lossy(&e.request).into_owned())
                .collect::<String>();
        let (tc, uc) = (sb.transfer_credentials(), sb.topup_credentials());
        for secret in [&tc.key, &uc.token, &uc.session_id]
            .into_iter()
            .chain(&pins)
        {
            assert!(
                !everything.contains(secret.as_str()),
                "the journal holds a secret"
            );
        }

        // Prune takes what changed strictly before now, to the database clock's millisecond:
        // one must pass, or a refusal recorded in prune's own millisecond stays.
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert_eq!(journal.prune(Duration::ZERO).await.expect("prune"), 2);
        let left = journal
            .list(&whish_journal::Listing::new().limit(100))
            .await
            .expect("list");
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].key, open.request_id().to_string());
    }
}

#[tokio::test]
async fn a_journal_url_is_checked_and_its_password_never_printed() {
    let e = Journal::open("mysql://root:hunter2@db/x")
        .await
        .expect_err("not a journal");
    assert_eq!(e.kind, whish_journal::JournalErrorKind::Url);
    assert!(!e.to_string().contains("hunter2"), "{e}");
    let e = Journal::open("postgres://app:hunter2@127.0.0.1:9/x")
        .await
        .expect_err("closed port");
    assert!(!e.to_string().contains("hunter2"), "{e}");
    assert!(!format!("{e:?}").contains("hunter2"), "{e:?}");
    // SQLite would read these as URIs (a database in memory; a file this journal would not
    // watch): refused before anything is opened or created.
    for url in [
        "sqlite:file::memory:?cache=shared",
        "sqlite:FILE:/tmp/whish-uri.sqlite",
    ] {
        let e = Journal::open(url).await.expect_err("a URI");
        assert_eq!(e.kind, whish_journal::JournalErrorKind::Url, "{url}: {e}");
    }
    assert!(!std::path::Path::new("file::memory:?cache=shared").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_opening_a_new_journal_at_once_all_open_it() {
    for place in places("concurrent_open").await {
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let url = place.url().to_owned();
            tasks.push(tokio::spawn(async move { Journal::open(&url).await }));
        }
        for t in tasks {
            let j = t.await.expect("task").expect("every open succeeds");
            assert!(
                j.list(&whish_journal::Listing::new().limit(1))
                    .await
                    .expect("list")
                    .is_empty()
            );
            j.close().await;
        }
    }
}

#[tokio::test]
async fn a_cancel_sent_again_after_its_reply_was_lost_is_recorded_as_applied() {
    use whish_money_transfer::TransferCode;
    for place in places("cancel_again").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let send = t.client().prepare_send(cash_send(80)).expect("prepare");
        let sent = t.send(&send).await.expect("sent");
        let cancel = t
            .client()
            .prepare_cancel(sent.ltn_number().expect("ltn"), None)
            .expect("prepare");
        sb.inject(Endpoint::TransferCancel, Fault::DropReply, 1);
        assert!(t.cancel(&cancel).await.expect_err("lost").outcome_unknown());
        // The caller sends the same cancel again: the service says it cannot be cancelled now
        // (it was, by the first one); the client reads the status by LTN and answers that the
        // earlier cancel applied, and the journal records it so.
        let again = t.cancel(&cancel).await.expect("the earlier cancel applied");
        assert_eq!(
            again.status,
            whish_money_transfer::TransferStatus::CanceledFull
        );
        // A transfer the receiver collected: the cancel did not apply, and that is a refusal.
        let collected = t
            .send(&t.client().prepare_send(cash_send(81)).expect("prepare"))
            .await
            .expect("sent");
        let ltn = collected.ltn_number().expect("ltn").to_owned();
        let late = t.client().prepare_cancel(&ltn, None).expect("prepare");
        // Its first cancel never reached the service (the connection closed before), and the
        // receiver collected meanwhile.
        sb.inject(Endpoint::TransferCancel, Fault::DropRequest, 1);
        assert!(t.cancel(&late).await.expect_err("lost").outcome_unknown());
        sb.collect_cash(&ltn).await.expect("collected");
        let late_again = t.cancel(&late).await.expect_err("cannot");
        assert_eq!(
            late_again.code(),
            Some(&TransferCode::TransferCannotBeCanceled)
        );
        assert!(late_again.is_refused(), "{late_again}");
        let entry = journal
            .entry(
                Service::MoneyTransfer,
                Operation::Cancel,
                &late.request_id().to_string(),
            )
            .await
            .expect("read")
            .expect("entry");
        assert_eq!(entry.state, State::Refused);
        let key = cancel.request_id().to_string();
        let entry = journal
            .entry(Service::MoneyTransfer, Operation::Cancel, &key)
            .await
            .expect("read")
            .expect("entry");
        assert_eq!(entry.state, State::Accepted, "{entry:?}");
        assert_eq!(
            entry.references.transfer_status.as_deref(),
            Some("CANCELED_FULL")
        );
    }
}

/// Prune deletes a final refusal, but keeps one that asks for the transfer again under a new
/// Request-id (a payout batch finds a row's later attempts through it: with it gone, a row
/// paid under its second Request-id would look never sent and be paid again under its first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_keeps_the_refusals_that_ask_for_a_new_request_id() {
    for place in places("prune-retry").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let limited = t.client().prepare_send(cash_send(81)).expect("prepare");
        let invalid = t.client().prepare_send(cash_send(82)).expect("prepare");
        for (p, code) in [
            (&limited, "transfer.exceeds_customer_daily_limit"),
            (&invalid, "api.account.invalid_request"),
        ] {
            sb.inject(Endpoint::TransferSend, Fault::Code(code), 1);
            let e = t.send(p).await.expect_err("refused");
            assert!(!e.outcome_unknown(), "{e}");
        }
        journal.flush().await;
        for p in [&limited, &invalid] {
            assert_eq!(
                state_of(
                    &journal,
                    Service::MoneyTransfer,
                    Operation::Send,
                    &p.request_id().to_string()
                )
                .await,
                State::Refused
            );
        }
        // Prune takes what changed strictly before now, to the database clock's millisecond:
        // one must pass, or a refusal recorded in prune's own millisecond stays.
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert_eq!(journal.prune(Duration::ZERO).await.expect("prune"), 1);
        let left = journal
            .list(&whish_journal::Listing::new().limit(100))
            .await
            .expect("list");
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(left[0].key, limited.request_id().to_string());
        assert!(sb.transfers().is_empty());
        journal.close().await;
    }
}

/// A journaled send that answered Pending is followed to its end through the journal: the
/// entry is settled (`accepted`, the transfer's references recorded) without a recovery run,
/// and the create is not sent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_journaled_send_is_followed_to_its_end_and_recorded() {
    for place in places("await_final").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let send = t.client().prepare_send(cash_send(31)).expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::Pending, 1);
        assert!(t.send(&send).await.expect_err("pending").is_pending());
        let entry = t
            .await_final(
                &send,
                whish_core::FollowUp::within(std::time::Duration::from_secs(10)),
            )
            .await
            .expect("followed");
        assert_eq!(entry.state, State::Accepted, "{place:?}: {entry:?}");
        assert!(entry.references.ltn_number.is_some(), "{entry:?}");
        let sends = sb
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/woo/send/money"))
            .count();
        assert_eq!(sends, 1, "the create was not sent again");
        journal.close().await;
    }
}
