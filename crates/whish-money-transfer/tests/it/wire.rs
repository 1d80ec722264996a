//! Every transfer endpoint on the wire (with the doubled /api of a base ending in /api), and
//! every transfer fixture decoded.

use crate::support::*;
use whish_core::Currency;
use whish_money_transfer::{
    ActivityStatus, CountryId, FeeRequest, PaymentMode, ReportRange, SendOutcome, StatementType,
    StatusQuery, TransferCode, TransferStatus,
};
use whish_testkit::{ScriptedServer, Step, fixture};

#[tokio::test]
async fn fees() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("money-transfer/fees.success.json")),
        Step::json(fixture("money-transfer/fees.deduct-fees.success.json")),
        Step::json(fixture(
            "money-transfer/fees.failure.amount-not-allowed.json",
        )),
        Step::json(fixture("money-transfer/fees.failure.invalid-amount.json")),
    ])
    .await;
    let c = client(&server.base, 0);
    let q = c
        .fees(&FeeRequest::new(
            CountryId::LEBANON,
            Currency::Usd,
            amount("100"),
        ))
        .await
        .expect("quote");
    assert_eq!(
        (q.fees.to_string(), q.total_amount.to_string()),
        ("5".into(), "105".into())
    );
    let q = c
        .fees(
            &FeeRequest::new(CountryId::LEBANON, Currency::Usd, amount("100.00"))
                .deduct_fees(true)
                .payment_mode(PaymentMode::MobileWallet)
                .phone_number("+96170123456"),
        )
        .await
        .expect("quote");
    assert_eq!(q.amount.to_string(), "95");
    let e = c
        .fees(&FeeRequest::new(
            CountryId::LEBANON,
            Currency::Usd,
            amount("1"),
        ))
        .await
        .expect_err("f");
    assert_eq!(e.code(), Some(&TransferCode::AmountNotAllowed));
    let e = c
        .fees(&FeeRequest::new(
            CountryId::LEBANON,
            Currency::Lbp,
            amount("1000"),
        ))
        .await
        .expect_err("f");
    assert_eq!(e.code(), Some(&TransferCode::TransferInvalidAmount));
    let reqs = server.requests();
    assert_eq!(reqs[0].path, "/sandbox/api/api/woo/send/money/fees");
    insta::assert_json_snapshot!("fees_request", stable(reqs[0].clone()));
    insta::assert_json_snapshot!("fees_request_wallet_deducted", stable(reqs[1].clone()));
}

#[tokio::test]
async fn send_cash_collection() {
    let server = ScriptedServer::start(vec![Step::json(fixture(
        "money-transfer/send.cash-collection.success.json",
    ))])
    .await;
    let c = client(&server.base, 0);
    let prepared = c
        .prepare_send(
            (cash("100.50", Currency::Usd)
                .callback_url("https://shop.example.com/whish/collected"))
            .request_id(rid(1755770400000001)),
        )
        .expect("valid");
    assert_eq!(prepared.request_id(), rid(1755770400000001));
    match c.send(&prepared).await.expect("sent") {
        SendOutcome::Sent(s) => {
            assert_eq!(s.ltn_number, "48213590");
            assert_eq!(s.transfer_id, "TR-20260821-000123");
            assert_eq!(s.charges.map(|c| c.to_string()), Some("5".into()));
            assert_eq!(s.request_id, rid(1755770400000001));
        }
        other => panic!("{other:?}"),
    }
    let req = &server.requests()[0];
    assert_eq!(req.path, "/sandbox/api/api/woo/send/money");
    assert_eq!(req.header("request-id"), Some("1755770400000001"));
    assert_eq!(req.body["receiver"]["identity"]["dateBirth"], "07-03-1990");
    insta::assert_json_snapshot!("send_cash_request", req);
}

#[tokio::test]
async fn send_mobile_wallet_keeps_a_transaction_id_above_2_pow_53() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("money-transfer/send.mobile-wallet.success.json")),
        Step::json(fixture(
            "money-transfer/send.mobile-wallet.success.null-currency.json",
        )),
    ])
    .await;
    let c = client(&server.base, 0);
    let prepared = c
        .prepare_send((wallet("100")).request_id(rid(1755770400000002)))
        .expect("valid");
    match c.send(&prepared).await.expect("credited") {
        SendOutcome::Credited(w) => {
            assert_eq!(w.transaction_id, Some(9_007_199_254_740_993));
            assert_eq!(
                w.collection_amount.map(|a| a.to_string()),
                Some("100".into())
            );
            assert_eq!(w.balance.map(|a| a.to_string()), Some("4897.5".into()));
            assert_eq!(w.currency.as_deref(), Some("USD"));
            assert!(w.dialog.expect("informational dialog").message.is_some());
        }
        other => panic!("{other:?}"),
    }
    let prepared = c
        .prepare_send((wallet("50")).request_id(rid(1755770400000003)))
        .expect("valid");
    let SendOutcome::Credited(w) = c.send(&prepared).await.expect("credited") else {
        panic!()
    };
    assert_eq!(w.currency, None);
    let req = &server.requests()[0];
    assert!(req.body.get("callbackUrl").is_none());
    assert!(
        req.body["receiver"].get("identity").is_none(),
        "optional for a wallet receiver"
    );
    insta::assert_json_snapshot!("send_wallet_request", req);
}

#[tokio::test]
async fn send_failures_and_pending() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("money-transfer/send.failure.already-done.json")),
        Step::json(fixture(
            "money-transfer/send.failure.receiver-name-enlgish.json",
        )),
        Step::json(fixture(
            "money-transfer/send.failure.receiver-svc-account-not-exists.json",
        )),
        Step::json(fixture("money-transfer/send.failure.unknown-code.json")),
        Step::json(fixture("money-transfer/send.pending.number.json")),
        Step::json(fixture("money-transfer/send.pending.string.json")),
    ])
    .await;
    let c = client(&server.base, 0);
    let mut outcomes = Vec::new();
    for i in 0..6 {
        let prepared = c
            .prepare_send((wallet("10")).request_id(rid(1755770400000100 + i)))
            .expect("valid");
        outcomes.push(c.send(&prepared).await.expect_err("refused or pending"));
    }
    insta::assert_debug_snapshot!("send_failures_decoded", outcomes);
    assert_eq!(
        outcomes[0].code(),
        Some(&TransferCode::TransferAlreadyDone),
        "already.done on a first attempt means the Request-id was reused: a failure"
    );
    assert_eq!(
        outcomes[1].code(),
        Some(&TransferCode::ReceiverCustomerNameEnlgish)
    );
    assert_eq!(
        outcomes[2].code(),
        Some(&TransferCode::ReceiverSvcAccountNotExists)
    );
    assert!(matches!(outcomes[3].code(), Some(TransferCode::Unknown(_))));
    assert!(outcomes[4].is_pending());
    assert_eq!(outcomes[4].idempotency_key(), Some("1755770400000104"));
    assert!(outcomes[5].is_pending());
}

#[tokio::test]
async fn status_by_each_identifier() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("money-transfer/status.sent.success.json")),
        Step::json(fixture("money-transfer/status.received.success.json")),
        Step::json(fixture("money-transfer/status.canceled-full.success.json")),
        Step::json(fixture("money-transfer/status.unknown-status.success.json")),
        Step::json(fixture("money-transfer/status.failure.invalid-info.json")),
        Step::json(fixture("money-transfer/status.failure.not-exists.json")),
    ])
    .await;
    let c = client(&server.base, 0);
    let queries = [
        StatusQuery::TransferId("TR-20260821-000123".into()),
        StatusQuery::LtnNumber("48213590".into()),
        StatusQuery::RequestId(rid(1755770400000001)),
        StatusQuery::RequestId(rid(1755770400000001)),
    ];
    let mut decoded = Vec::new();
    for q in &queries {
        decoded.push(c.status(q).await.expect("status"));
    }
    assert_eq!(decoded[0].status, TransferStatus::Sent);
    assert!(decoded[0].receiver_identity.is_none());
    assert_eq!(decoded[1].status, TransferStatus::Received);
    assert_eq!(
        decoded[1]
            .receiver_identity
            .as_ref()
            .and_then(|i| i.kind.as_deref()),
        Some("NATIONAL_ID")
    );
    assert_eq!(decoded[2].status, TransferStatus::CanceledFull);
    assert_eq!(decoded[3].status, TransferStatus::Other("ON_HOLD".into()));
    insta::assert_debug_snapshot!("status_decoded", decoded);
    let e = c.status(&queries[2]).await.expect_err("invalid info");
    assert_eq!(e.code(), Some(&TransferCode::SendingTransferInvalidInfo));
    assert!(
        e.hint()
            .contains("Resend the original create request with the same Request-id"),
        "{}",
        e.hint()
    );
    let e = c.status(&queries[0]).await.expect_err("not exists");
    assert_eq!(e.code(), Some(&TransferCode::TransferNotExists));
    let reqs: Vec<_> = server.requests().into_iter().map(stable).collect();
    assert_eq!(reqs[0].path, "/sandbox/api/api/woo/send/money/status");
    insta::assert_json_snapshot!("status_requests", &reqs[..3]);
}

#[tokio::test]
async fn status_by_several_identifiers_sends_them_together_and_refuses_another_transfer() {
    let another = fixture("money-transfer/status.sent.success.json")
        .replace("TR-20260821-000123", "TR-20260821-000999")
        .replace("48213590", "48219999");
    let server = ScriptedServer::start(vec![
        // Asked by all three: the read by all, then the Request-id's own read.
        Step::json(fixture("money-transfer/status.sent.success.json")),
        Step::json(fixture("money-transfer/status.sent.success.json")),
        Step::json(fixture("money-transfer/status.sent.success.json")),
        Step::json(fixture("money-transfer/status.sent.success.json")),
        // A Request-id of another transfer beside this transfer's id.
        Step::json(fixture("money-transfer/status.sent.success.json")),
        Step::json(another),
    ])
    .await;
    let c = client(&server.base, 0);
    let all = StatusQuery::Several {
        transfer_id: Some("TR-20260821-000123".into()),
        ltn_number: Some(" 48213590 ".into()),
        request_id: Some(rid(1755770400000001)),
    };
    assert_eq!(
        c.status(&all).await.expect("status").status,
        TransferStatus::Sent
    );
    // The reply names LTN 48213590: asked by another LTN, it is no answer to the question.
    let other = StatusQuery::Several {
        transfer_id: None,
        ltn_number: Some("99999999".into()),
        request_id: Some(rid(1755770400000001)),
    };
    let e = c.status(&other).await.expect_err("another transfer");
    assert!(e.outcome_unknown(), "{e:?}");
    assert!(e.to_string().contains("ltnNumber"), "{e}");
    let e = c
        .status(&StatusQuery::TransferId("TR-OTHER".into()))
        .await
        .expect_err("another transfer");
    assert!(e.to_string().contains("transferId"), "{e}");
    let mixed = StatusQuery::Several {
        transfer_id: Some("TR-20260821-000123".into()),
        ltn_number: None,
        request_id: Some(rid(1755770400000999)),
    };
    let e = c.status(&mixed).await.expect_err("two transfers");
    assert!(e.to_string().contains("Request-id 1755770400000999"), "{e}");
    let bodies: Vec<serde_json::Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(
        bodies[1],
        serde_json::json!({"requestId": 1755770400000001_i64}),
        "the Request-id is read alone"
    );
    assert_eq!(
        bodies[0],
        serde_json::json!({"transferId": "TR-20260821-000123", "ltnNumber": "48213590",
            "requestId": 1755770400000001_i64})
    );
    let none = StatusQuery::Several {
        transfer_id: Some(" ".into()),
        ltn_number: None,
        request_id: None,
    };
    assert!(
        c.status(&none)
            .await
            .expect_err("nothing to ask by")
            .nothing_sent()
    );
    assert_eq!(
        server.requests().len(),
        6,
        "a query with no identifier is not sent"
    );
}

#[tokio::test]
async fn cancel() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("money-transfer/cancel.success.json")),
        Step::json(fixture(
            "money-transfer/cancel.failure.cannot-be-canceled.json",
        )),
        Step::json(fixture("money-transfer/cancel.failure.not-exists.json")),
    ])
    .await;
    let c = client(&server.base, 3);
    let r = c
        .cancel(
            &c.prepare_cancel("48213590", Some("customer asked"))
                .expect("prepared"),
        )
        .await
        .expect("cancelled");
    assert_eq!(r.status, TransferStatus::CanceledFull);
    assert_eq!(r.receiver_identity, None);
    let e = c
        .cancel(&c.prepare_cancel("48213590", None).expect("prepared"))
        .await
        .expect_err("twice");
    assert_eq!(e.code(), Some(&TransferCode::TransferCannotBeCanceled));
    let e = c
        .cancel(&c.prepare_cancel("1", None).expect("prepared"))
        .await
        .expect_err("unknown");
    assert_eq!(e.code(), Some(&TransferCode::TransferNotExists));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[1].body.get("reason").is_none());
    insta::assert_json_snapshot!("cancel_request", stable(reqs[0].clone()));
}

#[tokio::test]
async fn countries_and_modes() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("money-transfer/countries.success.json")),
        Step::json(fixture("money-transfer/modes.success.json")),
        Step::json(fixture("money-transfer/modes.failure.error.json")),
    ])
    .await;
    let c = client(&server.base, 0);
    let countries = c.sending_countries().await.expect("countries");
    assert_eq!(countries[0].code, "LB");
    assert_eq!(countries[0].default_currency_id, Some(2));
    assert_eq!(countries[1].default_currency_id, None);
    let created = countries[1]
        .date_creation
        .expect("date")
        .to_offset_date_time()
        .expect("range");
    assert_eq!(created.millisecond(), 123);
    let modes = c.payment_modes().await.expect("modes");
    assert_eq!(
        modes,
        [PaymentMode::CashCollection, PaymentMode::MobileWallet]
    );
    let e = c.payment_modes().await.expect_err("error");
    assert_eq!(e.code(), Some(&TransferCode::GenericError));
    let reqs: Vec<_> = server.requests().into_iter().map(stable).collect();
    insta::assert_json_snapshot!("countries_and_modes_requests", &reqs[..2]);
    insta::assert_debug_snapshot!("countries_decoded", countries);
}

#[tokio::test]
async fn activity_and_statement() {
    let server = ScriptedServer::start(vec![
        Step::json(fixture("money-transfer/activity.success.json")),
        Step::json(fixture("money-transfer/activity.empty.success.json")),
        Step::json(fixture(
            "money-transfer/activity.failure.invalid-amount.json",
        )),
        Step::json(fixture("money-transfer/statement.success.json")),
        Step::json(fixture("money-transfer/statement.failure.error.json")),
    ])
    .await;
    let c = client(&server.base, 0);
    let range = ReportRange::starting("2026-08-01 00:00:00")
        .and_then(|r| r.until("2026-08-31 23:59:59"))
        .expect("range");
    let activity = c.activity(&range).await.expect("activity");
    assert_eq!(activity.len(), 5);
    assert_eq!(activity[2].status, ActivityStatus::Cancelled);
    assert_eq!(activity[3].total.to_string(), "13.44");
    assert!(c.activity(&range).await.expect("empty").is_empty());
    assert!(c.activity(&range).await.is_err());
    let usd = range.clone().currency(Currency::Usd);
    let statement = c.statement(&usd).await.expect("statement");
    assert_eq!(statement.len(), 2);
    let kinds: Vec<_> = statement[0]
        .transactions
        .iter()
        .map(|l| l.kind.clone())
        .collect();
    assert_eq!(
        kinds,
        [
            StatementType::Topup,
            StatementType::Transfer,
            StatementType::Cancellation,
            StatementType::Transfer,
            StatementType::Other("ADJUSTMENT".into())
        ]
    );
    assert_eq!(statement[0].transactions[0].request_id, None);
    assert_eq!(
        c.statement(&usd).await.expect_err("e").code(),
        Some(&TransferCode::GenericError)
    );
    let reqs: Vec<_> = server.requests().into_iter().map(stable).collect();
    assert_eq!(
        reqs[0].body["currencyId"],
        serde_json::Value::Null,
        "null means both currencies"
    );
    assert_eq!(reqs[3].body["currencyId"], 2);
    insta::assert_json_snapshot!("activity_request", reqs[0]);
    insta::assert_json_snapshot!("statement_request", reqs[3]);
    insta::assert_debug_snapshot!("activity_decoded", activity);
    insta::assert_debug_snapshot!("statement_decoded", statement);
}
