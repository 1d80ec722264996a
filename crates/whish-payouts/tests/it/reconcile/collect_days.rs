//! Hosted-collect reconciliation (`reconcile::collect`, `whish
//! reconcile collect --from .. --to ..`) reads the status only of the payments the journal
//! *created* in the range. Reconciled day by day (the guide's way), a refund made on a later
//! day than its payment's creation is in no day's report:
//!
//! - a refund made outside the journal (`refunded-outside-journal` exists for exactly that)
//!   of yesterday's payment: today's reconciliation says everything matches, and yesterday's
//!   was signed before the refund happened;
//! - likewise a payment created on the last second of a day (after `--to`'s whole second):
//!   neither that day nor the next looks at it.
//!
//! Run: `cargo test -p whish-payouts --features hosted-collect reconcile::collect_days`.
#![allow(dead_code, missing_docs)]
#![cfg(feature = "hosted-collect")]

use std::time::Duration;

use rust_decimal::Decimal;
use time::OffsetDateTime;
use whish_core::{Amount, ClientSettings, Currency, ExternalId, SecretString};
use whish_hosted_collect::{
    CollectClient, CollectUrls, FailureCallbackUrl, FailureRedirectUrl, NewPayment,
    SuccessCallbackUrl, SuccessRedirectUrl,
};
use whish_journal::Journal;
use whish_payouts::reconcile::{CollectFindingKind, CollectReport};
use whish_sandbox::Sandbox;

struct Setup {
    sb: Sandbox,
    client: CollectClient,
    j: Journal,
}

async fn setup(name: &str) -> Setup {
    let d = std::env::temp_dir().join(format!(
        "whish-payouts-collect-days-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("dir");
    let sb = Sandbox::builder()
        .lenient(true)
        .collect_balance("USD", Decimal::from(1_000_000u64))
        .start()
        .await
        .expect("sandbox");
    let c = sb.collect_credentials();
    let client = CollectClient::builder(
        ClientSettings::new(sb.collect_base_url())
            .user_agent(
                "PayoutsTests/1.0 (https://shop.example.com; dev@shop.example.com)"
                    .parse()
                    .expect("ua"),
            )
            .allow_local_callbacks(),
    )
    .channel(c.channel.clone())
    .secret(SecretString::from(c.secret.clone()))
    .website_url(c.website_url.clone())
    .build()
    .expect("collect client");
    let j = Journal::open(&format!("sqlite:{}", d.join("journal.sqlite").display()))
        .await
        .expect("journal");
    Setup { sb, client, j }
}

async fn create_paid(s: &Setup, cents: i64) -> ExternalId {
    let p = s
        .client
        .prepare_payment(NewPayment::new(
            Amount::new(Decimal::new(cents, 2)),
            Currency::Usd,
            CollectUrls::new(
                SuccessCallbackUrl::new("http://127.0.0.1:9/ok").expect("url"),
                FailureCallbackUrl::new("http://127.0.0.1:9/ko").expect("url"),
                SuccessRedirectUrl::new("https://shop.example.com/thanks").expect("url"),
                FailureRedirectUrl::new("https://shop.example.com/retry").expect("url"),
            ),
        ))
        .expect("prepare");
    let _ =
        s.j.collect(s.client.clone())
            .create_payment(&p)
            .await
            .expect("created");
    s.sb.pay_link(p.external_id().as_str()).await.expect("paid");
    p.external_id().clone()
}

fn flags(r: &CollectReport, id: &ExternalId) -> bool {
    r.findings.iter().any(|f| {
        f.external_id == id.as_str() && f.kind == CollectFindingKind::RefundedOutsideJournal
    })
}

/// Day 1: a payment is created through the journal and paid; day 1's reconciliation is clean
/// and signed. Day 2: the payment is refunded by something else (not through the journal).
/// Day 2's reconciliation (the range that holds the refund) says everything matches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refund_outside_the_journal_on_a_later_day_is_in_some_days_report() {
    let s = setup("collect-later-refund").await;
    let day1_from = OffsetDateTime::now_utc() - time::Duration::hours(1);
    let id = create_paid(&s, 2500).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let day1_to = OffsetDateTime::now_utc();
    let day1 = whish_payouts::reconcile::collect(&s.j, &s.client, day1_from, day1_to)
        .await
        .expect("reconcile day 1");
    assert!(
        day1.is_clean(),
        "setup: day 1 is clean: {:#?}",
        day1.findings
    );
    assert_eq!(day1.currencies["USD"].paid, 1, "setup: paid on day 1");

    tokio::time::sleep(Duration::from_millis(20)).await;
    let day2_from = OffsetDateTime::now_utc();
    let outside = s
        .client
        .prepare_refund(Currency::Usd, &id, Some("by hand"))
        .expect("refund");
    let _ = s
        .client
        .refund(&outside)
        .await
        .expect("refunded outside the journal");
    let day2_to = OffsetDateTime::now_utc() + time::Duration::hours(1);
    let day2 = whish_payouts::reconcile::collect(&s.j, &s.client, day2_from, day2_to)
        .await
        .expect("reconcile day 2");
    assert!(
        flags(&day1, &id) || flags(&day2, &id),
        "LIE: day 2's collect reconciliation claims everything matches (clean = {}, totals \
         {:?}), and day 1's was clean before the refund; TRUE: payment {} (25.00 USD) was \
         refunded on day 2 by something other than the journal: the money went back to the \
         payer and no day's report says so",
        day2.is_clean(),
        day2.currencies,
        id.as_str()
    );
}
