//! Reconciliation against the sandbox: after a batch (with collections and cancellations) it finds
//! nothing wrong; with a transfer made outside the journal, one the service never had, and a fee
//! the service records differently from its answer, it finds exactly those three.

use std::io::Write;
use std::time::Duration;

use rust_decimal::Decimal;
use time::OffsetDateTime;
use time::macros::format_description;
use whish_core::{Amount, ClientSettings, Currency, SecretString};
use whish_journal::Journal;
use whish_money_transfer::{
    CashCollectionSend, CashReceiver, CountryId, Customer, DateOfBirth, FirstName, Identity,
    LastName, Reason, ReportRange, Sender, SourceOfFunds, TransferClient,
};
use whish_payouts::reconcile::{self, FindingKind};
use whish_payouts::{Batch, Defaults, RunOptions};
use whish_sandbox::Sandbox;

async fn sandbox() -> Sandbox {
    let plenty = Decimal::from(10_000_000u64);
    Sandbox::builder()
        .transfer_balance("USD", plenty)
        .limits("USD", plenty, plenty)
        .start()
        .await
        .expect("sandbox")
}

fn client(sb: &Sandbox) -> TransferClient {
    let c = sb.transfer_credentials();
    TransferClient::builder(ClientSettings::new(sb.transfer_base_url()))
        .username(c.username.clone())
        .key(SecretString::from(c.key.clone()))
        .build()
        .expect("client")
}

fn one_send(amount: u32) -> CashCollectionSend {
    CashCollectionSend::new(
        CountryId::LEBANON,
        Currency::Usd,
        Amount::new(Decimal::from(amount)),
        Sender::new(Customer::new(
            FirstName::new("Other"),
            LastName::new("System"),
            "+9611999999",
        )),
        CashReceiver::new(
            Customer::new(
                FirstName::new("Nour"),
                LastName::new("Saad"),
                "+96170999999",
            ),
            Identity::new(DateOfBirth::parse("02-02-1992").expect("date")),
        ),
        Reason::FamilySupport,
        SourceOfFunds::Savings,
    )
}

fn range(from: OffsetDateTime, to: OffsetDateTime) -> ReportRange {
    let f = format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    ReportRange::starting(&from.format(&f).expect("format"))
        .expect("from")
        .until(&to.format(&f).expect("format"))
        .expect("to")
}

#[tokio::test]
async fn reconciliation_finds_nothing_after_a_batch_and_exactly_the_three_faults_after() {
    let d = std::env::temp_dir().join(format!("whish-payouts-reconcile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("dir");
    let sb = sandbox().await;
    let c = client(&sb);
    let j = Journal::open(&format!("sqlite:{}", d.join("journal.sqlite").display()))
        .await
        .expect("journal");
    let file = d.join("aid.csv");
    let mut text = String::from(
        "reference,receiver_first_name,receiver_last_name,receiver_phone,receiver_date_of_birth,amount,currency,reason,source_of_funds,deduct_fees\n",
    );
    for i in 0..30 {
        let deduct = i % 5 == 0;
        text.push_str(&format!(
            "R{i},Lina,Hajj,+9617055{i:04},03-04-1988,{},USD,Family Support,Salary,{deduct}\n",
            40 + i
        ));
    }
    std::fs::File::create(&file)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .expect("write");
    let from = OffsetDateTime::now_utc() - time::Duration::hours(1);
    let batch = Batch::new(
        "aid-reconcile",
        &file,
        Defaults::new()
            .from_country(CountryId::LEBANON)
            .sender(Customer::new(
                FirstName::new("Relief"),
                LastName::new("Org"),
                "+9611000000",
            )),
    )
    .expect("batch");
    let summary = batch
        .run(&j, &c, &RunOptions::new(), &mut |_| Ok(()))
        .await
        .expect("run");
    assert!(summary.all_accepted());
    sb.collect_share(0.4).await;
    let later = OffsetDateTime::now_utc() + time::Duration::hours(1);
    batch
        .cancel_uncollected(&j, &c, later, "end of programme", 4, &mut |_| Ok(()))
        .await
        .expect("cancel");
    tokio::time::sleep(Duration::from_millis(10)).await;
    let to = OffsetDateTime::now_utc() + time::Duration::hours(1);

    let report = reconcile::transfers(&j, &c, &range(from, to), from, to)
        .await
        .expect("reconcile");
    assert!(report.is_clean(), "{:#?}", report.findings);
    let usd = &report.currencies["USD"];
    assert_eq!(usd.sent, 30);
    assert_eq!(usd.matched, 30);
    assert_eq!(usd.collected + usd.cancelled, 30, "{usd:?}");
    assert_eq!(report.cancellations.len() as u64, usd.cancelled);
    assert_eq!(report.journal_sends, 30);
    assert!(usd.opening_balance.is_some() && usd.closing_balance.is_some());

    // 1. A transfer made outside the journal.
    let outside = c.prepare_send(one_send(77)).expect("prepare");
    let _ = c.send(&outside).await.expect("sent outside the journal");
    // 2. One the journal holds as accepted that this service never had (sent to another).
    let elsewhere = sandbox().await;
    let lost = client(&elsewhere)
        .prepare_send(one_send(55))
        .expect("prepare");
    let _ = j
        .transfer(client(&elsewhere))
        .send(&lost)
        .await
        .expect("sent elsewhere");
    // 3. A fee the service records differently from its answer.
    let row = j
        .find(&whish_payouts::key::request_id("aid-reconcile", "ref:R3", 0).to_string())
        .await
        .expect("find")
        .pop()
        .expect("row 3 in the journal");
    let ltn = row.references.ltn_number.clone().expect("ltn");
    sb.misreport_fee(&ltn, Decimal::new(999, 2))
        .expect("misreport");

    let to = OffsetDateTime::now_utc() + time::Duration::hours(1);
    let report = reconcile::transfers(&j, &c, &range(from, to), from, to)
        .await
        .expect("reconcile");
    let flagged = report.flagged();
    let expected: std::collections::BTreeSet<_> = [
        outside.request_id(),
        lost.request_id(),
        row.key.parse().expect("id"),
    ]
    .into_iter()
    .collect();
    assert_eq!(flagged, expected, "{:#?}", report.findings);
    let kinds: Vec<(FindingKind, _)> = report
        .findings
        .iter()
        .map(|f| (f.kind, f.request_id))
        .collect();
    assert!(kinds.contains(&(FindingKind::NotInJournal, Some(outside.request_id()))));
    assert!(kinds.contains(&(FindingKind::MissingAtService, Some(lost.request_id()))));
    assert!(kinds.contains(&(FindingKind::FeeDiffers, Some(row.key.parse().expect("id")))));
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::BalanceRule)
    );
}

/// A send recorded in the range and sent after it (as a recovery or a later run sends a request
/// recorded earlier): the range's activity log does not list it, but the status read finds it
/// at the service, so it is listed as sent after the range, never "missing at the service".
#[tokio::test]
async fn a_send_recorded_in_the_range_and_sent_after_it_is_not_missing() {
    let d = std::env::temp_dir().join(format!(
        "whish-payouts-reconcile-late-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("dir");
    let sb = sandbox().await;
    let c = client(&sb);
    let j = Journal::open(&format!("sqlite:{}", d.join("journal.sqlite").display()))
        .await
        .expect("journal");
    let from = OffsetDateTime::now_utc() - time::Duration::hours(1);
    let t = j.transfer(c.clone());
    let p = c.prepare_send(one_send(66)).expect("prepare");
    let mut reserved = t.reserve(vec![p.clone()]).await;
    let to = OffsetDateTime::now_utc();
    // The activity log dates to the second: sent more than a second after the range ends.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let _ = t
        .send_reserved(reserved.pop().expect("reserved"))
        .await
        .expect("sent");
    j.flush().await;
    let report = reconcile::transfers(&j, &c, &range(from, to), from, to)
        .await
        .expect("reconcile");
    assert!(report.is_clean(), "{:#?}", report.findings);
    assert_eq!(report.journal_sends, 1);
    assert_eq!(report.sent_after_range, vec![p.request_id()]);
    // The range that holds the send matches it.
    let to = OffsetDateTime::now_utc() + time::Duration::hours(1);
    let report = reconcile::transfers(&j, &c, &range(from, to), from, to)
        .await
        .expect("reconcile");
    assert!(report.is_clean(), "{:#?}", report.findings);
    assert!(report.sent_after_range.is_empty());
    assert_eq!(report.currencies["USD"].matched, 1);
    j.close().await;
}

#[cfg(feature = "hosted-collect")]
#[tokio::test]
async fn collect_reconciliation_flags_a_refund_made_outside_the_journal() {
    use whish_hosted_collect::{
        CollectClient, CollectUrls, FailureCallbackUrl, FailureRedirectUrl, NewPayment,
        SuccessCallbackUrl, SuccessRedirectUrl,
    };
    use whish_payouts::reconcile::CollectFindingKind;

    let d = std::env::temp_dir().join(format!("whish-payouts-collect-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("dir");
    // Lenient: the test's callback addresses are on loopback.
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
    let from = OffsetDateTime::now_utc() - time::Duration::hours(1);
    let journaled = j.collect(client.clone());
    let mut ids = Vec::new();
    for cents in [1500, 2500, 3500, 4500] {
        let p = client
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
        let _ = journaled.create_payment(&p).await.expect("created");
        ids.push(p.external_id().clone());
    }
    for id in &ids[..3] {
        sb.pay_link(id.as_str()).await.expect("paid");
    }
    // One refund through the journal, one made by something else.
    let r = client
        .prepare_refund(Currency::Usd, &ids[0], Some("returned"))
        .expect("refund");
    let _ = journaled.refund(&r).await.expect("refunded");
    let outside = client
        .prepare_refund(Currency::Usd, &ids[1], Some("by hand"))
        .expect("refund");
    let _ = client.refund(&outside).await.expect("refunded outside");
    let to = OffsetDateTime::now_utc() + time::Duration::hours(1);
    let report = whish_payouts::reconcile::collect(&j, &client, from, to)
        .await
        .expect("reconcile");
    let usd = &report.currencies["USD"];
    assert_eq!(
        (usd.created, usd.paid, usd.refunded, usd.pending),
        (4, 1, 2, 1),
        "{usd:?}"
    );
    assert_eq!(usd.created_amount, Decimal::from(120));
    assert_eq!(report.findings.len(), 1, "{:#?}", report.findings);
    assert_eq!(
        report.findings[0].kind,
        CollectFindingKind::RefundedOutsideJournal
    );
    assert_eq!(report.findings[0].external_id, ids[1].as_str());
}
