//! Property: no reply the services (or anything pretending to be them) can send makes a client
//! panic. Every endpoint of every client is called over loopback HTTP against bodies drawn from
//! the documented fixtures with random parts replaced, random envelopes, random JSON and random
//! bytes. Whatever arrives, the call returns `Ok` or a typed `Err`; a body that is not JSON is an
//! `Error::Http` (not an envelope), never a decode of garbage.

use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use whish::collect::{CollectClient, CollectUrls, NewPayment, PreparedPayment};
use whish::core::Error;
use whish::locations::{LocationsClient, ShopFilter};
use whish::topup::{PreparedPay, TopupClient};
use whish::transfer::callback::{AcceptUnverified, CallbackReceiver};
use whish::transfer::{
    CashCollectionSend, Customer, FeeRequest, FirstName, LastName, PreparedTransfer, Reason,
    ReportRange, SourceOfFunds, StatusQuery, TransferClient,
};
use whish::{Amount, Currency, EpochMillis, ExternalId, SecretString, UserAgent};
use whish_testkit::arbitrary::any_json;
use whish_testkit::{ScriptedServer, Step, fast_policy, fixture, fixtures_in};

/// Replace the node at `at` (pre-order, modulo the node count) with `with`.
fn replace_node(v: &mut Value, at: usize, with: Value) {
    fn count(v: &Value) -> usize {
        1 + match v {
            Value::Array(a) => a.iter().map(count).sum(),
            Value::Object(o) => o.values().map(count).sum(),
            _ => 0,
        }
    }
    fn walk(v: &mut Value, at: &mut usize, with: &mut Option<Value>) {
        if *at == 0 {
            if let Some(w) = with.take() {
                *v = w;
            }
            return;
        }
        *at -= 1;
        match v {
            Value::Array(a) => a.iter_mut().for_each(|c| walk(c, at, with)),
            Value::Object(o) => o.values_mut().for_each(|c| walk(c, at, with)),
            _ => {}
        }
    }
    let mut at = at % count(v);
    walk(v, &mut at, &mut Some(with));
}

/// A reply body: a mutated fixture of the service, a random envelope, random JSON, or bytes.
fn body(fixtures: &'static [Value]) -> impl Strategy<Value = (String, bool)> {
    let mutated = (
        0..fixtures.len(),
        prop::collection::vec((any::<usize>(), any_json()), 1..4),
    )
        .prop_map(move |(i, edits)| {
            let mut v = fixtures[i].clone();
            for (at, with) in edits {
                replace_node(&mut v, at, with);
            }
            (v.to_string(), true)
        });
    let envelope = (
        any::<bool>(),
        any_json(),
        any_json(),
        any_json(),
        any_json(),
    )
        .prop_map(|(status, code, data, dialog, retrieved)| {
            let v = json!({"status": status, "code": code, "data": data, "dialog": dialog,
                "retrieved": retrieved});
            (v.to_string(), true)
        });
    prop_oneof![
        5 => mutated,
        3 => envelope,
        1 => any_json().prop_map(|v| (v.to_string(), true)),
        1 => prop::collection::vec(any::<u8>(), 0..64)
            .prop_map(|b| (String::from_utf8_lossy(&b).into_owned(), false)),
    ]
}

fn fixtures(dir: &'static str, cell: &'static OnceLock<Vec<Value>>) -> &'static [Value] {
    cell.get_or_init(|| {
        fixtures_in(dir)
            .into_iter()
            .filter(|(name, _)| name.ends_with(".json"))
            .filter_map(|(_, text)| serde_json::from_str(&text).ok())
            .collect()
    })
}

/// The kind of an error, for the one claim made about non-JSON bodies: an unreadable reply is
/// never decoded; with HTTP 200 it is a decode error (the outcome is unknown, it may have been
/// applied), otherwise an HTTP error.
fn is_http<C: whish::core::ErrorCode>(e: &Error<C>) -> bool {
    matches!(e, Error::Http(_)) || matches!(e, Error::Decode(_) if e.outcome_unknown())
}

/// No resends, and an attempt timeout long enough for a loaded machine: a call that timed out
/// before the scripted server served it would leave its reply queued for the next call, which
/// would then read another endpoint's body (the full suite on two cores once made every case
/// of a run miss that way).
fn patient_policy() -> whish::core::Policy {
    let mut p = fast_policy(0);
    p.timeouts.attempt = std::time::Duration::from_secs(20);
    p
}

fn not_json(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_err()
}

/// Run `cases` random replies through `call`, which sends one request and returns whether the
/// reply, when it was not JSON, was reported as not an envelope.
fn check<F>(
    dir: &'static str,
    cell: &'static OnceLock<Vec<Value>>,
    server: &ScriptedServer,
    call: F,
) where
    F: Fn(usize) -> Option<bool>,
{
    let mut runner = TestRunner::new(Config {
        cases: 160,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (any::<usize>(), body(fixtures(dir, cell)));
    let successes = std::cell::Cell::new(0);
    runner
        .run(&strategy, |(endpoint, (text, _))| {
            let garbage = not_json(&text);
            server.push(Step::json(text));
            let reported_as_http = call(endpoint);
            if garbage {
                prop_assert_ne!(reported_as_http, Some(false), "a non-JSON body was decoded");
            }
            if reported_as_http.is_none() {
                successes.set(successes.get() + 1);
            }
            Ok(())
        })
        .expect("no reply makes a client panic");
    // The bodies reach the decoders: some mutated fixtures still decode.
    assert!(successes.get() > 0, "{dir}: no reply decoded at all");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn ua() -> UserAgent {
    "PropTest/1.0 (https://shop.example.com; dev@shop.example.com)"
        .parse()
        .expect("ua")
}

/// `Some(is_http)` for an error, `None` for a success.
fn outcome<T, C: whish::core::ErrorCode>(r: Result<T, Error<C>>) -> Option<bool> {
    r.err().map(|e| is_http(&e))
}

#[test]
fn transfer_and_locations_replies_never_panic() {
    static CELL: OnceLock<Vec<Value>> = OnceLock::new();
    static LOC: OnceLock<Vec<Value>> = OnceLock::new();
    let rt = runtime();
    let server = rt.block_on(ScriptedServer::start(Vec::new()));
    let key = || SecretString::from("key-SECRET");
    let client = TransferClient::builder(
        whish::ClientSettings::new(server.base.clone()).policy(patient_policy()),
    )
    .username("user")
    .key(key())
    .build()
    .expect("client");
    let locations = LocationsClient::builder(
        whish::ClientSettings::new(server.base.clone()).policy(patient_policy()),
    )
    .username("user")
    .key(key())
    .build()
    .expect("client");
    let amount: Amount = "100".parse().expect("amount");
    let send: PreparedTransfer = client
        .prepare_send(CashCollectionSend::new(
            whish::transfer::CountryId::LEBANON,
            Currency::Usd,
            amount,
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
        ))
        .expect("prepare");
    let fee = FeeRequest::new(whish::transfer::CountryId::LEBANON, Currency::Usd, amount);
    let range = ReportRange::starting("2026-01-01 00:00:00")
        .and_then(|r| r.until("2026-12-31 00:00:00"))
        .expect("range");
    let query = StatusQuery::LtnNumber("LTN1".into());
    check("money-transfer", &CELL, &server, |endpoint| {
        rt.block_on(async {
            match endpoint % 8 {
                0 => outcome(client.fees(&fee).await),
                1 => outcome(client.send(&send).await),
                2 => outcome(client.status(&query).await),
                3 => outcome(
                    client
                        .cancel(
                            &client
                                .prepare_cancel("LTN1", Some("reason"))
                                .expect("prepared"),
                        )
                        .await,
                ),
                4 => outcome(client.sending_countries().await),
                5 => outcome(client.payment_modes().await),
                6 => outcome(client.activity(&range).await),
                _ => outcome(client.statement(&range).await),
            }
        })
    });
    check("locations", &LOC, &server, |endpoint| {
        rt.block_on(async {
            match endpoint % 2 {
                0 => outcome(locations.governorates().await),
                _ => outcome(
                    locations
                        .shops(&ShopFilter::default().governorate_id(1))
                        .await,
                ),
            }
        })
    });
}

#[test]
fn transfer_callbacks_never_panic() {
    let receiver = CallbackReceiver::new(AcceptUnverified);
    let mut runner = TestRunner::new(Config {
        cases: 512,
        failure_persistence: None,
        ..Config::default()
    });
    let cell: &'static OnceLock<Vec<Value>> = Box::leak(Box::new(OnceLock::new()));
    let sample = fixtures("money-transfer", cell);
    let strategy = (
        body(sample),
        any::<i64>(),
        prop_oneof![".{0,16}", "[A-Za-z0-9+/]{0,43}="],
    );
    runner
        .run(&strategy, |((text, _), timestamp, signature)| {
            let mut headers = http::HeaderMap::new();
            if let Ok(v) = http::HeaderValue::from_str(&timestamp.to_string()) {
                headers.insert("timestamp", v);
            }
            if let Ok(v) = http::HeaderValue::from_str(&signature) {
                headers.insert("signature", v);
            }
            let _ = receiver.receive(&headers, text.as_bytes(), EpochMillis(timestamp));
            Ok(())
        })
        .expect("no callback makes the receiver panic");
}

#[test]
fn collect_replies_never_panic() {
    static CELL: OnceLock<Vec<Value>> = OnceLock::new();
    let rt = runtime();
    let server = rt.block_on(ScriptedServer::start(Vec::new()));
    let client = CollectClient::builder(
        whish::ClientSettings::new(server.base.clone())
            .policy(patient_policy())
            .user_agent(ua()),
    )
    .channel("channel")
    .secret(SecretString::from("secret-SECRET"))
    .website_url("https://shop.example.com")
    .build()
    .expect("client");
    let urls = CollectUrls::new(
        whish::collect::SuccessCallbackUrl::new("https://shop.example.com/ok").expect("url"),
        whish::collect::FailureCallbackUrl::new("https://shop.example.com/ko").expect("url"),
        whish::collect::SuccessRedirectUrl::new("https://shop.example.com/thanks").expect("url"),
        whish::collect::FailureRedirectUrl::new("https://shop.example.com/retry").expect("url"),
    );
    let prepared: PreparedPayment = client
        .prepare_payment(NewPayment::new(
            "25.50".parse().expect("amount"),
            Currency::Usd,
            urls,
        ))
        .expect("prepare");
    let id = ExternalId::new("order-1").expect("id");
    check("hosted-collect", &CELL, &server, |endpoint| {
        rt.block_on(async {
            match endpoint % 4 {
                0 => outcome(client.balance(Currency::Usd).await),
                1 => outcome(client.create_payment(&prepared).await),
                2 => outcome(client.status(Currency::Usd, &id).await),
                _ => outcome(
                    client
                        .refund(
                            &client
                                .prepare_refund(Currency::Usd, &id, Some("reason"))
                                .expect("prepared"),
                        )
                        .await,
                ),
            }
        })
    });
}

#[test]
fn topup_replies_never_panic() {
    static CELL: OnceLock<Vec<Value>> = OnceLock::new();
    let rt = runtime();
    let server = rt.block_on(ScriptedServer::start(vec![Step::json(fixture(
        "intl-topup/fetch.success.json",
    ))]));
    let client = TopupClient::builder(
        whish::ClientSettings::new(server.base.clone())
            .policy(patient_policy())
            .user_agent(ua()),
    )
    .session_id(SecretString::from("sess-SECRET"))
    .token(SecretString::from("tok-SECRET"))
    .build()
    .expect("client");
    let offer = rt
        .block_on(
            client.fetch_options(whish::topup::ProviderId::new("etisalat-ae"), "971501234567"),
        )
        .expect("fetch");
    let option = offer.options().first().expect("an option").clone();
    let prepared: PreparedPay = client.prepare_pay(&option).expect("prepare");
    check("intl-topup", &CELL, &server, |endpoint| {
        rt.block_on(async {
            match endpoint % 3 {
                0 => outcome(client.balance().await),
                1 => outcome(
                    client
                        .fetch_options(whish::topup::ProviderId::new("etisalat-ae"), "971501234567")
                        .await,
                ),
                _ => outcome(client.pay(&prepared).await),
            }
        })
    });
}
