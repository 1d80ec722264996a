#![allow(dead_code, missing_docs)]
//! The range edge of `reconcile::transfers`. The CLI and the guide
//! reconcile whole days, `--from "D 00:00:00" --to "D 23:59:59"`, then the next day from
//! `00:00:00`. Both ends are whole seconds; the journal records milliseconds, and the journal's
//! sends are taken with `created <= to` (to the millisecond). A send the journal recorded during
//! the last second of a day (23:59:59.001 .. 23:59:59.999) is in neither day's journal range:
//! if the service lost it, no day's reconciliation ever says `missing-at-service`: both say
//! everything matches.
//!
//! The test does not move any clock: it takes the `created` of a real lost send and builds the
//! two consecutive "days" around it exactly as the CLI builds them from its whole-second flags
//! (the last second of day 1 is the second that holds `created`).

use time::OffsetDateTime;
use time::macros::format_description;
use whish_core::{Amount, Currency};
use whish_money_transfer::{
    CashCollectionSend, CashReceiver, DateOfBirth, Identity, Reason, ReportRange, Sender,
    SourceOfFunds,
};
use whish_payouts::reconcile::{self, FindingKind, TransferReport};

use crate::support::*;

fn one_send(amount: u32, phone: &str) -> CashCollectionSend {
    CashCollectionSend::new(
        CountryId::LEBANON,
        Currency::Usd,
        Amount::new(Decimal::from(amount)),
        Sender::new(Customer::new(
            FirstName::new("Relief"),
            LastName::new("Org"),
            "+9611000000",
        )),
        CashReceiver::new(
            Customer::new(FirstName::new("Nour"), LastName::new("Saad"), phone),
            Identity::new(DateOfBirth::parse("02-02-1992").expect("date")),
        ),
        Reason::FamilySupport,
        SourceOfFunds::Savings,
    )
}

fn text(t: OffsetDateTime) -> String {
    t.format(&format_description!(
        "[year]-[month]-[day] [hour]:[minute]:[second]"
    ))
    .expect("format")
}

/// `whish reconcile transfer --from FROM --to TO`, as the CLI turns its flags into a call:
/// the same whole-second text for the service's range and, read as UTC, for the journal's.
async fn reconcile_cli_style(
    j: &Journal,
    c: &TransferClient,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> TransferReport {
    let range = ReportRange::starting(&text(from))
        .expect("from")
        .until(&text(to))
        .expect("to");
    reconcile::transfers(j, c, &range, from, to)
        .await
        .expect("reconcile")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_lost_at_the_service_in_the_last_second_of_a_day_is_missing_on_some_day() {
    let d = dir("midnight");
    let sb = sandbox(1_000_000).await;
    let c = client(&sb);
    let j = journal(&d).await;
    // A send the journal holds as accepted that this service never had (it went to another).
    let elsewhere = sandbox(1_000_000).await;
    let other = client(&elsewhere);
    let mut lost = None;
    for i in 0..20 {
        let p = other
            .prepare_send(one_send(20 + i, &format!("+961709{i:05}")))
            .expect("prepare");
        let _ = j.transfer(other.clone()).send(&p).await.expect("sent");
        j.flush().await;
        let e = j
            .find(&p.request_id().to_string())
            .await
            .expect("find")
            .pop()
            .expect("in the journal");
        // A recorded time with a fraction of a second (a whole second is one case in 1000).
        if e.created.millisecond() != 0 {
            lost = Some((p.request_id(), e.created));
            break;
        }
    }
    let (id, created) = lost.expect("a send recorded off a whole second");
    let last_second = created.replace_nanosecond(0).expect("whole second");

    // Day 1 ends at the whole second that holds the send ("23:59:59"); day 2 begins at the
    // next whole second ("00:00:00"), exactly as the guide's consecutive days do.
    let day1 =
        reconcile_cli_style(&j, &c, last_second - time::Duration::hours(1), last_second).await;
    let day2 = reconcile_cli_style(
        &j,
        &c,
        last_second + time::Duration::seconds(1),
        last_second + time::Duration::hours(1),
    )
    .await;
    let missing = |r: &TransferReport| {
        r.findings
            .iter()
            .any(|f| f.kind == FindingKind::MissingAtService && f.request_id == Some(id))
    };
    assert!(
        missing(&day1) || missing(&day2),
        "LIE: both consecutive days' reconciliations claim everything matches (day 1 clean = {}, \
         journal sends {}; day 2 clean = {}, journal sends {}); TRUE: the journal holds \
         Request-id {id} as accepted, recorded at {created} (inside day 1's last second \
         {last_second}), and the service never received it (lost). Neither day counts it \
         among the journal's sends",
        day1.is_clean(),
        day1.journal_sends,
        day2.is_clean(),
        day2.journal_sends,
    );
}
