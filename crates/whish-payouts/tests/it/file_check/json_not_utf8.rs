#![allow(dead_code, missing_docs)]
//! A JSON-lines file with one line that is not UTF-8 (a name typed in
//! Latin-1, `Kh\xe9oury`, as a Windows tool writes it). The reader (`read.rs`, `Rows::Json`)
//! turns the `lines()` error into `Rows::Failed(Vec::new())`: every line after it is never
//! read. The check then misses every later bad row (and counts fewer rows than the file
//! has), and `--skip-bad-rows` silently neither sends nor reports the good rows after it:
//! they vanish from the results. A CSV file with the same byte goes on to the next record.

use whish_payouts::RowOutcome;

use crate::support::*;

fn row(reference: &str, last: &[u8], amount: &str) -> Vec<u8> {
    let mut v = format!(
        "{{\"reference\":\"{reference}\",\"receiver_first_name\":\"Maya\",\"receiver_last_name\":\""
    )
    .into_bytes();
    v.extend_from_slice(last);
    v.extend_from_slice(
        format!(
            "\",\"receiver_phone\":\"+96170100000\",\"receiver_date_of_birth\":\"01-01-1985\",\"amount\":\"{amount}\",\"currency\":\"USD\",\"reason\":\"Family Support\",\"source_of_funds\":\"Salary\"}}\n"
        )
        .as_bytes(),
    );
    v
}

fn file_bytes(later_amount: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    bytes.extend(row("U1", b"Khoury", "10"));
    bytes.extend(row("U2", b"Kh\xe9oury", "10")); // line 2: not UTF-8
    bytes.extend(row("U3", b"Khoury", "10"));
    bytes.extend(row("U4", b"Khoury", later_amount)); // line 4
    bytes
}

#[tokio::test]
async fn a_non_utf8_json_line_hides_every_later_bad_row_from_the_check() {
    let d = dir("json-utf8-check");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("aid.jsonl");
    std::fs::write(&file, file_bytes("ten")).expect("write");
    let report = Batch::new("json-utf8-check", &file, defaults())
        .expect("batch")
        .check(&j, &c)
        .await
        .expect("check");
    let lines: Vec<(u64, &str)> = report
        .errors
        .iter()
        .map(|e| (e.line, e.field.as_str()))
        .collect();
    assert!(
        report.rows == 4 && lines.contains(&(4, "amount")),
        "the check of a 4-row JSON-lines file whose line 2 is not UTF-8 claims {} rows with bad rows {:?}: \
         it stopped reading at line 2, so line 4 (amount `ten`) is never reported, though every bad row \
         is promised with its line and column (a CSV file goes on to the next record)",
        report.rows,
        report.errors
    );
}

#[tokio::test]
async fn skip_bad_rows_silently_drops_every_good_row_after_a_non_utf8_json_line() {
    let d = dir("json-utf8-skip");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("aid.jsonl");
    std::fs::write(&file, file_bytes("10")).expect("write");
    let batch = Batch::new("json-utf8-skip", &file, defaults()).expect("batch");
    let (summary, results) = run(&batch, &j, &c, &RunOptions::new().skip_bad_rows(true)).await;
    let summary = summary.expect("run");
    let seen: Vec<(u64, RowOutcome)> = results.iter().map(|r| (r.line, r.outcome)).collect();
    let paid = sb.transfers().len();
    assert!(
        paid == 3 && results.len() == 4,
        "with skip_bad_rows, a 4-row JSON-lines file whose only bad row is line 2 (not UTF-8): \
         {paid} transfer(s) paid, summary.rows = {}, results {seen:?}. Promised: the good rows \
         (1, 3, 4) are sent and the bad one reported not-sent/bad-row; true: rows 3 and 4 are \
         neither sent nor reported at all (the reader ends the file at the first non-UTF-8 line)",
        summary.rows
    );
}
