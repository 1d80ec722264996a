#![allow(dead_code, missing_docs)]
//! "a file cannot silently drop a value". A MOBILE_WALLET row gives
//! `receiver_nationality` but no `receiver_date_of_birth` (optional for wallets). `row.rs`
//! builds the identity only from a date of birth (`dob.map(|d| ... nationality ...)`), so the
//! nationality is thrown away: the check passes and the transfer goes out without it.

use whish_sandbox::Endpoint;

use crate::support::*;

#[tokio::test]
async fn a_wallet_rows_nationality_without_a_birth_date_is_silently_dropped() {
    let d = dir("nationality");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("wallets.csv");
    write(
        &file,
        "reference,payment_mode,receiver_first_name,receiver_last_name,receiver_phone,receiver_nationality,amount,currency,reason,source_of_funds\n\
         W1,MOBILE_WALLET,Maya,Khoury,+96171234567,Syrian,150,USD,Family Support,Savings\n",
    );
    let batch = Batch::new("nationality", &file, defaults()).expect("batch");
    let check = batch.check(&j, &c).await.expect("check");
    if check.errors.is_empty() {
        let (s, r) = run(&batch, &j, &c, &RunOptions::new()).await;
        s.expect("run");
        let bodies: Vec<String> = sb
            .requests()
            .iter()
            .filter(|r| r.endpoint == Endpoint::TransferSend)
            .map(|r| r.body.clone())
            .collect();
        assert!(
            bodies.iter().all(|b| b.contains("Syrian")),
            "line 2 gives receiver_nationality `Syrian`; the check reported nothing and the row \
             was sent ({:?}) with the body(ies) {bodies:?}: the nationality was silently dropped \
             (a value of the file must be sent, or the row refused)",
            r.iter().map(|x| x.outcome).collect::<Vec<_>>()
        );
    }
}
