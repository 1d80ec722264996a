//! Property: the SDK's builders never emit a request that the service refuses for a reason the
//! SDK checks locally. Random sends, quotes and hosted payments, good and bad, go through the
//! builders; whatever they let through is sent to the sandbox (strict where the real service is
//! strict), and the sandbox must not answer it with a code the builder should have caught.
//!
//! Each run also checks that it is not vacuous: some inputs were refused locally, some passed
//! and were sent, and some of those the sandbox accepted.

use crate::support;

use std::cell::Cell;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use whish::collect::{CollectClient, CollectUrls, NewPayment};
use whish::core::Error;
use whish::topup::PayOutcome;
use whish::transfer::{
    CashCollectionSend, CashReceiver, CountryId, Customer, DateOfBirth, FeeRequest, FirstName,
    Identity, LastName, MobileWalletSend, Reason, SendRequest, Sender, SourceOfFunds,
    TransferClient, WalletReceiver,
};
use whish::{Amount, Currency, Decimal, SecretString};
use whish_sandbox::Sandbox;

/// Codes the transfer sandbox answers for what `prepare_send` checks: mode, currency, country,
/// reason and source (typed), names, an empty sender phone, dates of birth, a cash receiver's
/// identity, and a malformed body.
const SEND_LOCAL: &[&str] = &[
    "400",
    "api.account.invalid_request",
    "sender.missing_info",
    "receiver.empty",
    "currency.not_supported",
    "transfer.not_allowed_countries",
    "transfer.reason_empty",
    "transfer.sourceOfFunds_empty",
    "sender.customer.invalid_name",
    "receiver.customer.invalid_name",
    "sender.customer.name_enlgish",
    "receiver.customer.name_enlgish",
    "sender.invalid.phone.number",
    "sender.customer.date_of_birth_invalid",
    "receiver.customer.date_of_birth_invalid",
    "receiver.customer.info_invalid",
];

// Each generator draws valid values only, or (`bad`) a mix of valid and invalid ones, so that a
// run has both inputs the builders let through and inputs they refuse.

fn name(bad: bool) -> BoxedStrategy<String> {
    if !bad {
        return prop_oneof!["[A-Z][a-z]{1,9}", "[A-Z][a-z]{1,5}(-| |')[A-Z][a-z]{1,5}"].boxed();
    }
    prop_oneof![
        4 => "[A-Z][a-z]{1,9}",
        1 => "[A-Za-z][A-Za-z '.-]{0,10}",
        1 => " [A-Za-z]{1,5} ",
        1 => Just(String::new()),
        1 => Just("  ".to_owned()),
        1 => Just("رامي".to_owned()),
        1 => "[a-z0-9_]{1,6}",
        1 => ".{0,8}",
    ]
    .boxed()
}

fn phone(bad: bool) -> BoxedStrategy<String> {
    let good = prop_oneof!["\\+9617[0-9]{7}", "\\+1[0-9]{10}"];
    if !bad {
        return good.boxed();
    }
    prop_oneof![
        4 => good,
        1 => Just(String::new()),
        1 => Just(" ".to_owned()),
        1 => "[0-9 +]{0,16}",
        1 => ".{0,6}",
    ]
    .boxed()
}

fn birth_date(bad: bool) -> BoxedStrategy<Option<String>> {
    let good = "(0[1-9]|1[0-9]|2[0-8])-(0[1-9]|1[0-2])-(19[5-9][0-9]|200[0-7])".prop_map(Some);
    if !bad {
        return good.boxed();
    }
    prop_oneof![
        4 => good,
        1 => Just(None),
        1 => Just(Some("31-02-1990".to_owned())),
        1 => Just(Some("01-01-2999".to_owned())),
        1 => Just(Some("1990-03-07".to_owned())),
        1 => ".{0,10}".prop_map(Some),
    ]
    .boxed()
}

fn amount(bad: bool) -> BoxedStrategy<Amount> {
    let good = (100i64..50_000, 0u32..=2).prop_map(|(m, s)| Amount::new(Decimal::new(m, s)));
    if !bad {
        return good.boxed();
    }
    prop_oneof![
        4 => good,
        1 => (-1000i64..2_000_000, 0u32..=4).prop_map(|(m, s)| Amount::new(Decimal::new(m, s))),
    ]
    .boxed()
}

fn currency(bad: bool) -> BoxedStrategy<Currency> {
    if !bad {
        return Just(Currency::Usd).boxed();
    }
    prop_oneof![
        4 => Just(Currency::Usd),
        1 => Just(Currency::Lbp),
        1 => Just(Currency::from_code("EUR")),
    ]
    .boxed()
}

fn country(bad: bool) -> BoxedStrategy<i64> {
    if !bad {
        return Just(1i64).boxed();
    }
    prop_oneof![4 => Just(1i64), 1 => -1i64..3].boxed()
}

/// A customer, or `None` when a typed part of it (the date of birth) refused its text: that
/// refusal is local too, and nothing is sent.
fn customer(bad: bool) -> impl Strategy<Value = Option<Customer>> {
    (
        name(bad),
        name(bad),
        phone(bad),
        prop::option::of(name(bad)),
        birth_date(bad),
    )
        .prop_map(|(first, last, phone, middle, birth)| {
            let mut c = Customer::new(FirstName::new(first), LastName::new(last), phone);
            if let Some(m) = middle {
                c = c.middle_name(m);
            }
            if let Some(b) = birth {
                c = c.identity(Identity::new(DateOfBirth::parse(&b).ok()?));
            }
            Some(c)
        })
}

fn callback_url(bad: bool) -> BoxedStrategy<Option<String>> {
    let good = prop_oneof![
        Just(None),
        Just(Some("https://shop.example.com/whish/cb?order=1".to_owned())),
    ];
    if !bad {
        return good.boxed();
    }
    prop_oneof![
        2 => good,
        1 => Just(Some("http://127.0.0.1:9/cb".to_owned())),
        1 => Just(Some("http://shop.example.com/cb".to_owned())),
        1 => Just(Some("not a url".to_owned())),
    ]
    .boxed()
}

/// A send, or `None` when a typed part (country id, date of birth) refused its input.
fn send_of(bad: bool) -> impl Strategy<Value = Option<SendRequest>> {
    (
        any::<bool>(),
        country(bad),
        currency(bad),
        amount(bad),
        customer(bad),
        customer(bad),
        birth_date(bad),
        callback_url(bad),
    )
        .prop_map(
            |(cash, from, currency, amount, sender, receiver, birth, callback)| {
                let from = CountryId::new(from).ok()?;
                let (sender, receiver) = (Sender::new(sender?), receiver?);
                Some(if cash {
                    let identity = Identity::new(DateOfBirth::parse(&birth?).ok()?);
                    let mut s = CashCollectionSend::new(
                        from,
                        currency,
                        amount,
                        sender,
                        CashReceiver::new(receiver, identity),
                        Reason::FamilySupport,
                        SourceOfFunds::Salary,
                    );
                    if let Some(u) = callback {
                        s = s.callback_url(u);
                    }
                    s.into()
                } else {
                    MobileWalletSend::new(
                        from,
                        currency,
                        amount,
                        sender,
                        WalletReceiver::new(receiver),
                        Reason::Education,
                        SourceOfFunds::Savings,
                    )
                    .into()
                })
            },
        )
}

fn send() -> impl Strategy<Value = Option<SendRequest>> {
    prop_oneof![2 => send_of(false), 3 => send_of(true)]
}

/// What one generated input came to.
enum Verdict {
    /// The builder refused it: nothing was sent.
    RefusedLocally,
    /// Sent, and the service did what was asked.
    Accepted,
    /// Sent, and the service refused it with this code (`HTTP 403` for a bare status).
    Refused(String),
    /// Sent, with no answer either way (a transport error).
    Unanswered,
}

impl Verdict {
    fn of<T, C>(r: &Result<T, Error<C>>) -> Verdict {
        match r {
            Ok(_) => Verdict::Accepted,
            Err(Error::Validation(_)) => Verdict::RefusedLocally,
            Err(Error::Failed(f)) => Verdict::Refused(f.raw.clone()),
            Err(Error::Http(h)) => Verdict::Refused(format!("HTTP {}", h.status)),
            Err(_) => Verdict::Unanswered,
        }
    }
}

/// Counts that show a run exercised both sides of the local checks.
#[derive(Default, Debug)]
struct Tally {
    refused_locally: Cell<u32>,
    sent: Cell<u32>,
    accepted: Cell<u32>,
}

fn bump(c: &Cell<u32>) {
    c.set(c.get() + 1);
}

/// Run `cases` inputs from `strategy` through `case`, on a blocking thread (`case` drives the
/// clients with the runtime handle it is given). Fail when the service refuses an input with a
/// code that `is_local` says the builder checks; then check the run refused some inputs locally,
/// sent some, and had some accepted.
async fn check<S, V>(
    what: &'static str,
    cases: u32,
    strategy: impl FnOnce() -> S + Send + 'static,
    case: impl Fn(&tokio::runtime::Handle, &V) -> Verdict + Send + 'static,
    is_local: impl Fn(&V, &str) -> bool + Send + 'static,
) where
    S: Strategy<Value = V>,
    V: std::fmt::Debug,
{
    let tally = tokio::task::spawn_blocking(move || {
        let rt = tokio::runtime::Handle::current();
        let tally = Tally::default();
        TestRunner::new(Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        })
        .run(&strategy(), |input| {
            let verdict = case(&rt, &input);
            if !matches!(verdict, Verdict::RefusedLocally) {
                bump(&tally.sent);
            }
            match verdict {
                Verdict::RefusedLocally => bump(&tally.refused_locally),
                Verdict::Accepted => bump(&tally.accepted),
                Verdict::Refused(code) => prop_assert!(
                    !is_local(&input, &code),
                    "the builder let through {input:?}, which the service refused with {code}"
                ),
                Verdict::Unanswered => {}
            }
            Ok(())
        })
        .expect("no locally checkable refusal");
        tally
    })
    .await
    .expect("runner");
    eprintln!("{what}: {tally:?}");
    assert!(
        tally.refused_locally.get() > 0 && tally.sent.get() > 0 && tally.accepted.get() > 0,
        "{what}: the run did not exercise both sides: {tally:?}"
    );
}

fn public_client(sb: &Sandbox) -> TransferClient {
    let c = sb.transfer_credentials();
    TransferClient::builder(
        whish::ClientSettings::new(sb.transfer_base_url()).policy(support::policy(0)),
    )
    .username(c.username.clone())
    .key(SecretString::from(c.key.clone()))
    .build()
    .expect("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_that_pass_the_builder_pass_the_service_checks() {
    let sb = Sandbox::builder()
        .transfer_balance("USD", Decimal::from(1_000_000_000))
        .transfer_balance("LBP", Decimal::from(1_000_000_000_000i64))
        .limits(
            "USD",
            Decimal::from(1_000_000),
            Decimal::from(1_000_000_000),
        )
        .start()
        .await
        .expect("sandbox");
    let client = public_client(&sb);
    check(
        "send",
        192,
        send,
        move |rt, request| {
            let Some(Ok(prepared)) = request.clone().map(|r| client.prepare_send(r)) else {
                return Verdict::RefusedLocally;
            };
            Verdict::of(&rt.block_on(client.send(&prepared)))
        },
        |_, code| SEND_LOCAL.contains(&code),
    )
    .await;
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotes_that_pass_the_builder_pass_the_service_checks() {
    let sb = Sandbox::start().await.expect("sandbox");
    let client = public_client(&sb);
    check(
        "fees",
        128,
        || {
            prop_oneof![
                (
                    country(false),
                    currency(false),
                    amount(false),
                    any::<bool>()
                ),
                (country(true), currency(true), amount(true), any::<bool>()),
            ]
        },
        move |rt, &(from, ref currency, amount, deduct)| {
            let Ok(from) = CountryId::new(from) else {
                return Verdict::RefusedLocally;
            };
            let request = FeeRequest::new(from, currency.clone(), amount).deduct_fees(deduct);
            Verdict::of(&rt.block_on(client.fees(&request)))
        },
        // amount.not_allowed is local only without deductFees (a non-positive amount); with it,
        // it means the amount does not cover the fee.
        |&(_, _, _, deduct), code| {
            ["400", "currency.not_supported"].contains(&code)
                || (!deduct && code == "amount.not_allowed")
        },
    )
    .await;
    sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payments_that_pass_the_builder_pass_the_strict_service() {
    // Strict: the real service answers HTTP 403 to a callback or redirect it cannot reach.
    let sb = Sandbox::builder()
        .lenient(false)
        .start()
        .await
        .expect("sandbox");
    let c = sb.collect_credentials();
    let client = CollectClient::builder(
        whish::ClientSettings::new(sb.collect_base_url())
            .policy(support::policy(0))
            .user_agent(support::ua()),
    )
    .channel(c.channel.clone())
    .secret(SecretString::from(c.secret.clone()))
    .website_url(c.website_url.clone())
    .build()
    .expect("client");
    check(
        "collect create",
        160,
        || {
            let good = "https://shop\\.example\\.com/whish/(ok|ko|thanks)\\?order=[0-9]{1,4}";
            let url = prop_oneof![
                4 => good,
                1 => Just(" https://shop.example.com/padded ".to_owned()),
                1 => Just("http://127.0.0.1:9/cb".to_owned()),
                1 => Just("http://shop.example.com/cb".to_owned()),
                1 => Just("https://10.0.0.7/cb".to_owned()),
                1 => Just("https://localhost/cb".to_owned()),
                1 => Just(String::new()),
                1 => ".{0,12}",
            ];
            prop_oneof![
                2 => (
                    amount(false),
                    currency(false),
                    [good, good, good, good].prop_map(|u| u.map(|r| r.to_owned())).boxed(),
                    prop::option::of("[A-Za-z0-9 #-]{0,20}"),
                ),
                3 => (
                    amount(true),
                    currency(true),
                    [url.clone(), url.clone(), url.clone(), url].boxed(),
                    prop::option::of(".{0,20}"),
                ),
            ]
        },
        move |rt, (amount, currency, [sc, fc, sr, fr], invoice)| {
            let (Ok(sc), Ok(fc), Ok(sr), Ok(fr)) = (
                whish::collect::SuccessCallbackUrl::new(sc),
                whish::collect::FailureCallbackUrl::new(fc),
                whish::collect::SuccessRedirectUrl::new(sr),
                whish::collect::FailureRedirectUrl::new(fr),
            ) else {
                return Verdict::RefusedLocally;
            };
            let urls = CollectUrls::new(sc, fc, sr, fr);
            let mut payment = NewPayment::new(*amount, currency.clone(), urls);
            if let Some(i) = invoice {
                payment = payment.invoice(i.clone());
            }
            let Ok(prepared) = client.prepare_payment(payment) else {
                return Verdict::RefusedLocally;
            };
            Verdict::of(&rt.block_on(client.create_payment(&prepared)))
        },
        |_, code| ["400", "HTTP 403", "currency.not_supported"].contains(&code),
    )
    .await;
    sb.shutdown().await;
}

#[tokio::test]
async fn every_fetched_option_pays_without_an_amount_refusal() {
    let sb = Sandbox::builder()
        .topup_balance(Decimal::from(100_000), Decimal::ZERO)
        .start()
        .await
        .expect("sandbox");
    let client = support::topup(&sb, 0);
    let mut paid = 0;
    for (provider, target) in [
        ("etisalat-ae", "+971501234567"),
        ("du-ae", "971501234567"),
        ("gift-voucher", "buyer@example.com"),
    ] {
        let offer = client
            .fetch_options(whish::topup::ProviderId::new(provider), target)
            .await
            .expect("fetch");
        for option in offer.options() {
            let prepared = client
                .prepare_pay(option)
                .expect("a fetched option always prepares");
            match client.pay(&prepared).await {
                Ok(PayOutcome::Paid(_)) => paid += 1,
                other => panic!("{provider} {option:?}: {other:?}"),
            }
        }
    }
    assert_eq!(sb.sales().len(), paid);
    assert!(paid >= 3);
    sb.shutdown().await;
}
