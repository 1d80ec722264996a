#![allow(dead_code, missing_docs)]
//! The same batch re-run from its CSV converted to JSON lines ("JSON
//! lines, one object a line, with the same names as keys"), under the same batch name (the
//! CLI's default name is the file's stem: `aid.csv` and `aid.jsonl` are both `aid`). A row
//! without a reference is keyed by its line number (`row.rs`, `Payout::row_key`), and the
//! line of a CSV row counts the header (first data row: line 2) while the same row in JSON
//! lines is line 1. The converted file's first row gets a key never paid: it is paid again,
//! with no refusal and no warning. The docs only warn of a line *inserted above*; nothing in
//! the converted file was inserted, the same rows are in the same order.
//!
//! Fixed by requiring a reference on every row unless the batch keys rows by line on purpose
//! (`Batch::key_rows_by_line`, `--key-by-line`), which names this risk.

use whish_payouts::RowOutcome;

use crate::support::*;

#[tokio::test]
async fn a_row_without_a_reference_is_refused_unless_keyed_by_line_on_purpose() {
    let d = dir("convert");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let header = "receiver_first_name,receiver_last_name,receiver_phone,receiver_date_of_birth,amount,currency,reason,source_of_funds";
    let csv = d.join("aid.csv");
    write(
        &csv,
        &format!("{header}\nRami,Haddad,+96170123456,07-03-1990,150,USD,Family Support,Savings\n"),
    );
    // A row without a reference is a bad row: nothing is sent, in either format.
    let first = Batch::new("aid", &csv, defaults()).expect("batch");
    let (s1, _) = run(&first, &j, &c, &RunOptions::new()).await;
    assert!(
        matches!(&s1, Err(BatchError::BadRows(r)) if r.errors.iter().any(|e| e.field == "reference")),
        "{s1:?}"
    );
    let jsonl = d.join("aid.jsonl");
    write(
        &jsonl,
        "{\"receiver_first_name\":\"Rami\",\"receiver_last_name\":\"Haddad\",\"receiver_phone\":\"+96170123456\",\"receiver_date_of_birth\":\"07-03-1990\",\"amount\":\"150\",\"currency\":\"USD\",\"reason\":\"Family Support\",\"source_of_funds\":\"Savings\"}\n",
    );
    let again = Batch::new("aid", &jsonl, defaults()).expect("batch");
    let check = again.check(&j, &c).await.expect("check");
    assert_eq!(
        check
            .errors
            .iter()
            .map(|e| (e.line, e.field.as_str()))
            .collect::<Vec<_>>(),
        vec![(1, "reference")]
    );
    assert!(sb.requests().is_empty(), "nothing sent");

    // Keyed by line on purpose, the CSV pays its row; the converted file is the documented
    // risk of that choice, so it is not run here.
    let first = first.key_rows_by_line(true);
    let (s1, r1) = run(&first, &j, &c, &RunOptions::new()).await;
    assert!(s1.expect("run 1").all_accepted(), "{r1:#?}");
    assert_eq!(sb.transfers().len(), 1);
    let (s2, r2) = run(&first, &j, &c, &RunOptions::new()).await;
    let outcome: Vec<(u64, RowOutcome, bool)> = r2
        .iter()
        .map(|r| (r.line, r.outcome, r.earlier_run))
        .collect();
    assert_eq!(
        sb.transfers().len(),
        1,
        "{outcome:?} {:?}",
        s2.map(|s| s.outcomes)
    );
}
