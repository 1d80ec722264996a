#![allow(dead_code, missing_docs)]
//! "a file cannot silently add a value". In JSON lines a boolean is
//! accepted in any column and kept as its text (`read.rs`, `json_row`: `b't' | b'f'` =>
//! `raw.to_owned()`), so `"receiver_middle_name": false` (a tool's "no middle name") is sent
//! as the receiver's middle name `false`. The docs allow a string or a number (amount) and
//! `true` for `deduct_fees`; a name of `false` is a value the file did not hold.

use whish_sandbox::Endpoint;

use crate::support::*;

#[tokio::test]
async fn a_json_false_in_a_name_column_is_paid_to_a_receiver_named_false() {
    let d = dir("json-bool");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("aid.jsonl");
    write(
        &file,
        "{\"reference\":\"B1\",\"receiver_first_name\":\"Maya\",\"receiver_middle_name\":false,\"receiver_last_name\":\"Khoury\",\"receiver_phone\":\"+96170100000\",\"receiver_date_of_birth\":\"01-01-1985\",\"amount\":150,\"currency\":\"USD\",\"reason\":\"Family Support\",\"source_of_funds\":\"Salary\"}\n",
    );
    let batch = Batch::new("json-bool", &file, defaults()).expect("batch");
    let check = batch.check(&j, &c).await.expect("check");
    if check.errors.is_empty() {
        let (s, _) = run(&batch, &j, &c, &RunOptions::new()).await;
        s.expect("run");
    }
    let bodies: Vec<String> = sb
        .requests()
        .iter()
        .filter(|r| r.endpoint == Endpoint::TransferSend)
        .map(|r| r.body.clone())
        .collect();
    assert!(
        bodies.iter().all(|b| !b.contains("\"false\"")),
        "line 1 has `\"receiver_middle_name\": false`; the check reported {:?} and the SDK sent \
         {bodies:?}: the receiver's middle name became the word `false` (a value the file did not \
         hold); a boolean in a text column must be refused with its line and column",
        check.errors
    );
}
