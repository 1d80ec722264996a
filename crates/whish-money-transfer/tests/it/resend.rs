//! Safe resend: the same bytes and Request-id after a timeout or Pending, and
//! `transfer.already.done` read through status.

use std::time::Duration;

use crate::support::*;
use whish_core::Currency;
use whish_money_transfer::{SendOutcome, TransferCode, TransferStatus};
use whish_testkit::{ScriptedServer, Step, fixture};

#[tokio::test]
async fn timeout_then_already_done_is_confirmed_through_status() {
    let server = ScriptedServer::start(vec![
        Step::Delay(
            Duration::from_millis(1500),
            Box::new(Step::json(fixture(
                "money-transfer/send.cash-collection.success.json",
            ))),
        ),
        Step::json(fixture("money-transfer/send.failure.already-done.json")),
        Step::json(fixture("money-transfer/status.sent.success.json")),
        // The activity log, both currencies: nothing under this Request-id with another amount.
        Step::json(fixture("money-transfer/activity.success.json")),
    ])
    .await;
    let c = client(&server.base, 2);
    let prepared = c.prepare_send(cash("100", Currency::Usd)).expect("valid");
    let id = prepared.request_id();
    match c.send(&prepared).await.expect("confirmed") {
        SendOutcome::Confirmed { request_id, status } => {
            assert_eq!(request_id, id);
            assert_eq!(status.status, TransferStatus::Sent);
            assert_eq!(status.ltn_number.as_deref(), Some("48213590"));
        }
        other => panic!("{other:?}"),
    }
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4, "send, resend, status, activity");
    assert_eq!(reqs[3].path, "/sandbox/api/api/woo/activity");
    assert!(
        reqs[3].body["currencyId"].is_null(),
        "both currencies (someone else's transfer in the other currency is a line too): {}",
        reqs[3].body
    );
    assert_eq!(reqs[0].raw_body, reqs[1].raw_body, "identical bytes");
    assert_eq!(reqs[0].header("request-id"), Some(id.to_string().as_str()));
    assert_eq!(
        reqs[1].header("request-id"),
        Some(id.to_string().as_str()),
        "same Request-id"
    );
    assert_eq!(reqs[2].path, "/sandbox/api/api/woo/send/money/status");
    assert_eq!(
        reqs[2].body["requestId"],
        id.get(),
        "status by that requestId"
    );
}

#[tokio::test]
async fn pending_is_an_error_and_is_not_resent() {
    // Spec rule 5 resends after a timeout; Pending is "followed up", not resent.
    let server = ScriptedServer::start(vec![
        Step::json(fixture("money-transfer/send.pending.number.json")),
        Step::json(fixture("money-transfer/send.failure.already-done.json")),
    ])
    .await;
    let c = client(&server.base, 3);
    let prepared = c.prepare_send(wallet("20")).expect("valid");
    let err = c.send(&prepared).await.expect_err("pending");
    assert!(err.is_pending() && err.outcome_unknown() && err.code().is_none());
    assert_eq!(
        err.idempotency_key(),
        Some(prepared.request_id().to_string().as_str())
    );
    assert_eq!(server.hits(), 1, "a Pending create is not resent");
}

#[tokio::test]
async fn question_mark_propagates_a_refusal_and_a_pending() {
    async fn send_with_question_mark(
        c: &whish_money_transfer::TransferClient,
        prepared: &whish_money_transfer::PreparedTransfer,
    ) -> Result<SendOutcome, whish_money_transfer::Error> {
        let outcome = c.send(prepared).await?;
        Ok(outcome)
    }
    let server = ScriptedServer::start(vec![
        Step::json(fixture(
            "money-transfer/send.failure.receiver-name-enlgish.json",
        )),
        Step::json(fixture("money-transfer/send.pending.string.json")),
    ])
    .await;
    let c = client(&server.base, 0);
    let refused = send_with_question_mark(&c, &c.prepare_send(wallet("5")).expect("valid"))
        .await
        .expect_err("a refusal is an Err");
    assert_eq!(
        refused.code(),
        Some(&TransferCode::ReceiverCustomerNameEnlgish)
    );
    assert!(!refused.outcome_unknown());
    let pending = send_with_question_mark(&c, &c.prepare_send(wallet("5")).expect("valid"))
        .await
        .expect_err("Pending is an Err");
    assert!(pending.is_pending());
}

#[tokio::test]
async fn dropped_reply_is_recovered_without_a_duplicate() {
    let server = ScriptedServer::start(vec![
        Step::Drop,
        Step::json(fixture("money-transfer/send.failure.already-done.json")),
        Step::json(fixture("money-transfer/status.sent.success.json")),
    ])
    .await;
    let c = client(&server.base, 2);
    let prepared = c.prepare_send(cash("1000", Currency::Lbp)).expect("valid");
    let outcome = c.send(&prepared).await.expect("confirmed");
    assert!(matches!(outcome, SendOutcome::Confirmed { .. }));
    let sends = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/woo/send/money"))
        .count();
    assert_eq!(sends, 2, "one original, one resend, no new Request-id");
}

#[tokio::test]
async fn pending_outlasting_the_policy_then_a_later_send_confirms() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("money-transfer/send.pending.string.json")),
        Step::json(fixture("money-transfer/send.pending.string.json")),
        Step::json(fixture("money-transfer/send.failure.already-done.json")),
        Step::json(fixture("money-transfer/status.received.success.json")),
    ])
    .await;
    let c = client(&server.base, 1);
    let prepared = c.prepare_send(wallet("20")).expect("valid");
    let first = c.send(&prepared).await.expect_err("pending");
    assert!(first.is_pending());
    let second = c.send(&prepared).await.expect_err("pending again");
    assert!(second.is_pending());
    let later = c.send(&prepared).await.expect("confirmed");
    assert!(matches!(later, SendOutcome::Confirmed { .. }), "{later:?}");
}

#[tokio::test]
async fn already_done_on_a_first_attempt_is_a_failure() {
    let server = ScriptedServer::start(vec![Step::json(fixture(
        "money-transfer/send.failure.already-done.json",
    ))])
    .await;
    let c = client(&server.base, 2);
    let prepared = c
        .prepare_send((cash("10", Currency::Usd)).request_id(rid(42)))
        .expect("valid");
    let err = c.send(&prepared).await.expect_err("refused");
    assert_eq!(err.code(), Some(&TransferCode::TransferAlreadyDone));
    assert_eq!(server.hits(), 1, "no status call, no resend");
}

#[tokio::test]
async fn explicit_resend_after_a_restart_reads_already_done_as_confirmation() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("money-transfer/send.failure.already-done.json")),
        Step::json(fixture("money-transfer/status.sent.success.json")),
    ])
    .await;
    let c = client(&server.base, 0);
    let prepared = c
        .prepare_send((cash("10", Currency::Usd)).request_id(rid(42)))
        .expect("valid");
    let outcome = c.resend(&prepared).await.expect("confirmed");
    assert!(matches!(outcome, SendOutcome::Confirmed { .. }));
}

#[tokio::test]
async fn a_failure_code_is_never_resent() {
    let server = ScriptedServer::start(vec![Step::json(fixture(
        "money-transfer/send.failure.receiver-name-enlgish.json",
    ))])
    .await;
    let c = client(&server.base, 3);
    let prepared = c.prepare_send(cash("10", Currency::Usd)).expect("valid");
    assert!(
        c.send(&prepared)
            .await
            .expect_err("refused")
            .code()
            .is_some()
    );
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn await_final_follows_a_pending_create_up_with_status() {
    use whish_core::FollowUp;
    let server = ScriptedServer::start(vec![
        Step::json(fixture("money-transfer/send.pending.number.json")),
        Step::json(fixture("money-transfer/send.pending.number.json")),
        Step::json(fixture("money-transfer/status.failure.invalid-info.json")),
        Step::json(fixture("money-transfer/status.sent.success.json")),
    ])
    .await;
    let c = client(&server.base, 0);
    let prepared = c.prepare_send(cash("100", Currency::Usd)).expect("valid");
    let pending = c.send(&prepared).await.expect_err("pending");
    assert!(pending.is_pending());
    let follow = FollowUp::within(Duration::from_secs(5))
        .waits(Duration::from_millis(1), Duration::from_millis(5));
    let state = c
        .await_final(prepared.request_id(), follow)
        .await
        .expect("it exists");
    assert_eq!(state.status, TransferStatus::Sent);
    let reqs = server.requests();
    assert_eq!(
        reqs.len(),
        4,
        "one send, three status reads, no second create"
    );
    assert!(
        reqs[1..]
            .iter()
            .all(|r| r.path.ends_with("/status")
                && r.body["requestId"] == prepared.request_id().get())
    );
}

/// The activity log writes amounts as the service's doubles: a fee-deducted send of 10.28 is a
/// line whose total reads `10.280000000000001`. That is this send, compared as money of its
/// currency: `transfer.already.done` is confirmed, not left unknown as someone else's.
#[tokio::test]
async fn an_activity_total_written_as_a_double_is_the_same_money() {
    let id = whish_core::RequestId::new(4_401_002).expect("id");
    let activity = format!(
        r#"{{"status":true,"code":null,"data":{{"list":[{{"id":"TR-1","status":"SENT","amount":9.18,"fee":1.1,"total":10.280000000000001,"currency":"USD","date":"2026-08-21 10:00:00","requestId":{}}}]}}}}"#,
        id.get()
    );
    let server = ScriptedServer::start(vec![
        Step::Delay(
            Duration::from_millis(1500),
            Box::new(Step::json(fixture(
                "money-transfer/send.cash-collection.success.json",
            ))),
        ),
        Step::json(fixture("money-transfer/send.failure.already-done.json")),
        Step::json(fixture("money-transfer/status.sent.success.json")),
        Step::json(activity),
    ])
    .await;
    let c = client(&server.base, 2);
    let prepared = c
        .prepare_send(
            cash("10.28", Currency::Usd)
                .deduct_fees(true)
                .request_id(id),
        )
        .expect("valid");
    match c.send(&prepared).await.expect("confirmed") {
        SendOutcome::Confirmed { request_id, .. } => assert_eq!(request_id, id),
        other => panic!("{other:?}"),
    }
    // A cent apart is another transfer.
    assert!(
        !whish_core::Amount::parse("10.29")
            .expect("amount")
            .is_same_sum(
                whish_core::Amount::parse("10.280000000000001").expect("amount"),
                &Currency::Usd
            )
    );
}

/// The dialog of a successful cash-collection send is part of the reply (the envelope's
/// `dialog`), as it is of a wallet credit: kept, not dropped.
#[tokio::test]
async fn a_cash_sends_success_dialog_is_kept() {
    let server = ScriptedServer::start(vec![Step::json(
        r#"{"status":true,"code":null,"data":{"ltnNumber":"48213590","transferId":"TR-1","charges":5.0},"dialog":{"title":"Done","message":"Transfer created"},"extra":null,"actions":null}"#
            .to_owned(),
    )])
    .await;
    let c = client(&server.base, 0);
    let prepared = c.prepare_send(cash("100", Currency::Usd)).expect("valid");
    match c.send(&prepared).await.expect("sent") {
        SendOutcome::Sent(s) => {
            let dialog = s.dialog.expect("the dialog");
            assert_eq!(dialog.message.as_deref(), Some("Transfer created"));
        }
        other => panic!("{other:?}"),
    }
}
