//! The money-transfer and locations flows, end to end: SDK clients against the sandbox over HTTP.

use crate::support::*;
use whish::core::Error;
use whish::prelude::*;
use whish::transfer::callback::{CallbackReceiver, SignedInput};
use whish::transfer::{ActivityStatus, TransferStatus, reconcile};
use whish_sandbox::{Endpoint, Fault, Sandbox};

fn amount(s: &str) -> Amount {
    s.parse().expect("amount")
}

fn cash(amount_text: &str) -> CashCollectionSend {
    CashCollectionSend::new(
        whish::transfer::CountryId::LEBANON,
        Currency::Usd,
        amount(amount_text),
        whish::transfer::Sender::new(Customer::new(
            FirstName::new("John"),
            LastName::new("Smith"),
            "+14155550100",
        )),
        whish::transfer::CashReceiver::new(
            Customer::new(
                FirstName::new("Rami"),
                LastName::new("Haddad"),
                "+96170123456",
            ),
            whish::transfer::Identity::new(
                whish::transfer::DateOfBirth::parse("07-03-1990").expect("valid"),
            ),
        ),
        Reason::FamilySupport,
        SourceOfFunds::Salary,
    )
}

fn wallet(phone: &str) -> MobileWalletSend {
    MobileWalletSend::new(
        whish::transfer::CountryId::LEBANON,
        Currency::Usd,
        amount("50"),
        whish::transfer::Sender::new(Customer::new(
            FirstName::new("John"),
            LastName::new("Smith"),
            "+14155550100",
        )),
        whish::transfer::WalletReceiver::new(Customer::new(
            FirstName::new("Rami"),
            LastName::new("Haddad"),
            phone,
        )),
        Reason::Education,
        SourceOfFunds::Savings,
    )
}

#[tokio::test]
async fn quote_send_collect_callback_and_status() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let client = transfer(&sb, 0);
    let listener = Listener::start().await;

    let quote = client
        .fees(&FeeRequest::new(
            whish::transfer::CountryId::LEBANON,
            Currency::Usd,
            amount("100"),
        ))
        .await
        .expect("quote");
    assert_eq!(quote.fees, amount("5"));
    assert_eq!(quote.total_amount, amount("105"));
    let deducted = client
        .fees(
            &FeeRequest::new(
                whish::transfer::CountryId::LEBANON,
                Currency::Usd,
                amount("100"),
            )
            .deduct_fees(true),
        )
        .await
        .expect("quote");
    assert_eq!(
        (deducted.amount, deducted.total_amount),
        (amount("95"), amount("100"))
    );

    let prepared = client
        .prepare_send(
            cash("100").callback_url(format!("{}/whish/collected?order=7", listener.base)),
        )
        .expect("prepared");
    let sent = match client.send(&prepared).await.expect("send") {
        SendOutcome::Sent(s) => s,
        other => panic!("expected Sent, got {other:?}"),
    };
    assert_eq!(sent.request_id, prepared.request_id());
    let status = client
        .status(&StatusQuery::LtnNumber(sent.ltn_number.clone()))
        .await
        .expect("status");
    assert_eq!(status.status, TransferStatus::Sent);

    let collected = sb.collect_cash(&sent.ltn_number).await.expect("collect");
    assert!(
        collected
            .callback
            .as_ref()
            .is_some_and(|d| d.acknowledged())
    );
    let got = listener.received();
    assert_eq!(got.len(), 1);
    let cb = &got[0];
    assert_eq!(cb.uri.to_string(), "/whish/collected?order=7");
    // The SDK's receiver with the sandbox's (documented, sandbox-only) signature scheme.
    let key = sb.callback_key().to_vec();
    let receiver = CallbackReceiver::new(move |i: &SignedInput<'_>| {
        whish_sandbox::callback::verify_signature(&key, i.timestamp, i.body, i.signature)
    });
    let now = whish::EpochMillis(time::OffsetDateTime::now_utc().unix_timestamp() * 1000);
    let parsed = receiver
        .receive(&cb.headers, &cb.body, now)
        .expect("a valid callback");
    assert_eq!(parsed.external_id, prepared.request_id());
    assert_eq!(parsed.transfer_id, sent.transfer_id);
    assert_eq!(parsed.status, TransferStatus::Received);
    let mut tampered = cb.body.to_vec();
    tampered[0] = b' ';
    assert!(receiver.receive(&cb.headers, &tampered, now).is_err());

    // The callback is a notification: status is authoritative.
    let by_request = client
        .status(&StatusQuery::RequestId(prepared.request_id()))
        .await
        .expect("status");
    assert_eq!(by_request.status, TransferStatus::Received);
    assert!(by_request.receiver_identity.is_some());
    sb.shutdown().await;
}

#[tokio::test]
async fn send_then_cancel_and_the_cancel_rules() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let client = transfer(&sb, 0);
    let prepared = client.prepare_send(cash("250")).expect("prepared");
    let SendOutcome::Sent(sent) = client.send(&prepared).await.expect("send") else {
        panic!("not sent")
    };
    let cancelled = client
        .cancel(
            &client
                .prepare_cancel(&sent.ltn_number, Some("customer asked"))
                .expect("prepared"),
        )
        .await
        .expect("cancel");
    assert_eq!(cancelled.status, TransferStatus::CanceledFull);
    let again = client
        .cancel(
            &client
                .prepare_cancel(&sent.ltn_number, None)
                .expect("prepared"),
        )
        .await
        .expect_err("twice");
    assert!(
        matches!(&again, Error::Failed(f) if f.raw == "transfer.cannot_be_canceled"),
        "{again:?}"
    );
    let unknown = client
        .cancel(&client.prepare_cancel("0000", None).expect("prepared"))
        .await
        .expect_err("unknown");
    assert!(matches!(&unknown, Error::Failed(f) if f.raw == "transfer.not_exists"));
    let status = client
        .status(&StatusQuery::TransferId(sent.transfer_id.clone()))
        .await
        .expect("status");
    assert_eq!(status.status, TransferStatus::CanceledFull);
    assert!(
        sb.collect_cash(&sent.ltn_number).await.is_err(),
        "a cancelled transfer cannot be collected"
    );
    sb.shutdown().await;
}

#[tokio::test]
async fn mobile_wallet_credited_failed_and_pending() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let client = transfer(&sb, 0);
    let phones = sb.wallet_phones().clone();

    let p = client
        .prepare_send(wallet(&phones.credited))
        .expect("prepared");
    match client.send(&p).await.expect("send") {
        SendOutcome::Credited(w) => {
            assert_eq!(w.collection_amount, Some(amount("50")));
            assert!(w.transaction_id.is_some());
            assert!(
                w.dialog.is_some(),
                "a wallet success carries an informational dialog"
            );
        }
        other => panic!("expected Credited, got {other:?}"),
    }
    let cancel = client
        .cancel(
            &client
                .prepare_cancel(&sb.transfers()[0].ltn_number, None)
                .expect("prepared"),
        )
        .await
        .expect_err("wallet");
    assert!(matches!(&cancel, Error::Failed(f) if f.raw == "transfer.cannot_be_canceled"));

    let p = client
        .prepare_send(wallet(&phones.failing))
        .expect("prepared");
    let refused = client.send(&p).await.expect_err("refused");
    assert!(matches!(&refused, Error::Failed(f) if f.raw == "receiver.svc.account.not.exists"));

    let p = client
        .prepare_send(wallet(&phones.pending))
        .expect("prepared");
    let pending = client.send(&p).await.expect_err("pending");
    assert!(pending.is_pending());
    assert_eq!(
        pending.idempotency_key(),
        Some(p.request_id().to_string().as_str())
    );
    assert_eq!(
        sb.transfers().len(),
        2,
        "the failed wallet send created nothing"
    );
    sb.shutdown().await;
}

#[tokio::test]
async fn activity_and_statement_reconcile_with_the_balance_rule() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let client = transfer(&sb, 0);
    let a = client.prepare_send(cash("100")).expect("a");
    let b = client.prepare_send(cash("40")).expect("b");
    let SendOutcome::Sent(sa) = client.send(&a).await.expect("a") else {
        panic!()
    };
    let SendOutcome::Sent(_) = client.send(&b).await.expect("b") else {
        panic!()
    };
    client
        .cancel(
            &client
                .prepare_cancel(&sa.ltn_number, None)
                .expect("prepared"),
        )
        .await
        .expect("cancel");

    let range = ReportRange::starting("2000-01-01 00:00:00")
        .and_then(|r| r.until("2100-01-01 00:00:00"))
        .expect("range");
    let activity = client.activity(&range).await.expect("activity");
    let of_a: Vec<_> = activity
        .iter()
        .filter(|e| e.request_id == Some(a.request_id()))
        .map(|e| e.status.clone())
        .collect();
    assert_eq!(of_a, [ActivityStatus::Sent, ActivityStatus::Cancelled]);
    let latest = reconcile::latest_states(&activity);
    assert_eq!(latest.len(), 2);

    let statement = client
        .statement(&range.currency(Currency::Usd))
        .await
        .expect("statement");
    assert_eq!(statement.len(), 1);
    reconcile::check_balance_rule(&statement[0]).expect("balance = previous + debit - credit");
    let current = statement[0].current_balance.as_ref().expect("current");
    // 50 000 opening, -105 and -45 sent, +105 back on cancel.
    assert_eq!(current.balance, amount("49955"));
    sb.shutdown().await;
}

#[tokio::test]
async fn a_dropped_reply_is_recovered_by_the_safe_resend_with_no_duplicate() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let client = transfer(&sb, 2);
    sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
    let prepared = client.prepare_send(cash("100")).expect("prepared");
    match client.send(&prepared).await.expect("send") {
        SendOutcome::Confirmed { request_id, status } => {
            assert_eq!(request_id, prepared.request_id());
            assert_eq!(status.status, TransferStatus::Sent);
        }
        other => panic!("expected Confirmed, got {other:?}"),
    }
    assert_eq!(sb.transfers().len(), 1, "no duplicate");
    let sends: Vec<_> = sb
        .requests()
        .into_iter()
        .filter(|r| r.endpoint == Endpoint::TransferSend)
        .collect();
    assert_eq!(sends.len(), 2);
    assert_eq!(
        sends[0].body, sends[1].body,
        "the resend carries the same bytes"
    );
    let id = |r: &whish_sandbox::ReceivedRequest| {
        r.headers
            .iter()
            .find(|h| h.starts_with("request-id:"))
            .cloned()
    };
    assert_eq!(id(&sends[0]), id(&sends[1]), "and the same Request-id");

    // A dropped request (never applied) is simply resent: one transfer, answered Sent.
    sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
    let p2 = client.prepare_send(cash("10")).expect("prepared");
    assert!(matches!(
        client.send(&p2).await.expect("send"),
        SendOutcome::Sent(_)
    ));
    assert_eq!(sb.transfers().len(), 2);
    sb.shutdown().await;
}

#[tokio::test]
async fn a_used_request_id_guards_a_different_transfer_and_status_says_never_received() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let client = transfer(&sb, 0);
    let first = client.prepare_send(cash("10")).expect("first");
    let _ = client.send(&first).await.expect("send");
    let reuse = client
        .prepare_send((cash("20")).request_id(first.request_id()))
        .expect("same id, other transfer");
    let refused = client.send(&reuse).await.expect_err("refused");
    assert!(matches!(&refused, Error::Failed(f) if f.raw == "transfer.already.done"));
    assert_eq!(
        sb.transfers().len(),
        1,
        "the second transfer was never created"
    );
    let never = client
        .status(&StatusQuery::RequestId(RequestId::new(42).expect("id")))
        .await
        .expect_err("never received");
    assert!(matches!(&never, Error::Failed(f) if f.raw == "sending.transfer.invalid.info"));
    sb.shutdown().await;
}

#[tokio::test]
async fn limits_balance_price_list_and_countries() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let client = transfer(&sb, 0);
    let code = |o: Result<SendOutcome, whish::transfer::Error>| match o {
        Err(Error::Failed(f)) => f.raw,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let p = client.prepare_send(cash("8000")).expect("p");
    assert_eq!(
        code(client.send(&p).await),
        "transfer.exceeds_account_transaction_limit"
    );
    let p = client.prepare_send(cash("20000")).expect("p");
    assert_eq!(code(client.send(&p).await), "transfer.invalid_amount");
    sb.set_transfer_balance("USD", "50".parse().expect("d"))
        .expect("balance");
    let p = client.prepare_send(cash("100")).expect("p");
    assert_eq!(
        code(client.send(&p).await),
        "transfer.account_reach_balance_limit"
    );
    let other_country = CashCollectionSend::new(
        whish::transfer::CountryId::new(99).expect("valid"),
        Currency::Usd,
        amount("10"),
        whish::transfer::Sender::new(Customer::new(
            FirstName::new("John"),
            LastName::new("Smith"),
            "+14155550100",
        )),
        whish::transfer::CashReceiver::new(
            Customer::new(
                FirstName::new("Rami"),
                LastName::new("Haddad"),
                "+96170123456",
            ),
            whish::transfer::Identity::new(
                whish::transfer::DateOfBirth::parse("07-03-1990").expect("valid"),
            ),
        ),
        Reason::Other,
        SourceOfFunds::Other,
    );
    let p = client.prepare_send(other_country).expect("p");
    assert_eq!(
        code(client.send(&p).await),
        "transfer.from_country_not_allowed"
    );
    let countries = client.sending_countries().await.expect("countries");
    assert_eq!(countries.len(), 1);
    assert_eq!(countries[0].code, "LB");
    assert_eq!(client.payment_modes().await.expect("modes").len(), 2);
    assert!(sb.transfers().is_empty());
    sb.shutdown().await;
}

#[tokio::test]
async fn governorates_districts_and_shops() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let client = locations(&sb);
    let gs = client.governorates().await.expect("governorates");
    assert_eq!(gs.len(), 8);
    let mut districts: Vec<i64> = gs
        .iter()
        .flat_map(|g| g.districts.iter().map(|d| d.id))
        .collect();
    districts.sort_unstable();
    assert_eq!(districts, (1..=26).collect::<Vec<_>>());
    let all = client.shops(&ShopFilter::default()).await.expect("shops");
    let beirut = client
        .shops(&ShopFilter::default().governorate_id(1))
        .await
        .expect("shops");
    let tripoli = client
        .shops(&ShopFilter::default().district_id(8))
        .await
        .expect("shops");
    let none = client
        .shops(&ShopFilter::default().governorate_id(1).district_id(8))
        .await
        .expect("shops");
    assert!(all.len() > beirut.len() && !beirut.is_empty());
    assert_eq!(tripoli.len(), 1);
    assert!(none.is_empty(), "an empty array when nothing matches");
    sb.shutdown().await;
}

#[tokio::test]
async fn wrong_credentials_answer_the_auth_code_in_the_envelope() {
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .expect("sandbox");
    let bad = TransferClient::builder(sb.transfer_base_url())
        .username("sandbox-user")
        .key(SecretString::from("wrong"))
        .build()
        .expect("client");
    let err = bad.sending_countries().await.expect_err("refused");
    assert!(
        matches!(&err, Error::Failed(f) if f.raw == "api.account.invalid_request"),
        "{err:?}"
    );
    sb.shutdown().await;
}
