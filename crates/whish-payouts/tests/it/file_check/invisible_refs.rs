#![allow(dead_code, missing_docs)]
//! "two rows are never the same payment (a reference used twice is
//! refused)". References that print the same but differ by an invisible code point are two
//! keys: a zero-width space, a byte-order mark left in the middle of a file (two exports
//! pasted together), or the same accented letter in NFC and NFD (macOS vs Windows). The
//! check trims only whitespace (`row.rs`, `get`) and compares bytes (`run.rs`, `seen` of the
//! derived Request-ids), so each pair is paid twice: the same receiver, the same amount.
//! (Surrounding spaces and a no-break space are trimmed and caught: those hold.)
//!
//! Fixed by taking only printable ASCII as a reference: each look-alike is a bad row.

use crate::support::*;

#[tokio::test]
async fn references_differing_only_by_invisible_code_points_are_refused() {
    let d = dir("invisible");
    let sb = sandbox(1_000_000).await;
    let (j, c) = (journal(&d).await, client(&sb));
    let file = d.join("aid.csv");
    let rows = [
        ("BEN-00017", "+96170000017"),
        ("BEN-00017\u{200b}", "+96170000017"), // zero-width space
        ("BEN-00018", "+96170000018"),
        ("\u{feff}BEN-00018", "+96170000018"), // a BOM mid-file
        ("BEN-CAF\u{c9}", "+96170000019"),     // É, NFC
        ("BEN-CAFE\u{301}", "+96170000019"),   // É, NFD
    ];
    let mut text = format!("{HEADER}\n");
    for (reference, phone) in rows {
        text.push_str(&format!(
            "{reference},Rami,Haddad,{phone},07-03-1990,150,USD,Family Support,Savings\n"
        ));
    }
    write(&file, &text);
    let batch = Batch::new("invisible", &file, defaults()).expect("batch");
    let check = batch.check(&j, &c).await.expect("check");
    let (s, _) = run(&batch, &j, &c, &RunOptions::new()).await;
    let paid = sb.transfers().len();
    assert!(
        paid <= 3,
        "three references, each written twice (once with an invisible zero-width space, BOM, or \
         as NFD): the check reported {:?} and the run {:?} paid {paid} transfers of 150 USD, each \
         receiver twice. A reference repeated on another line is promised to be refused",
        check.errors,
        s.map(|s| s.outcomes)
    );
    // Each look-alike is reported on its own line (the accented one in both spellings: only
    // printable ASCII is a reference).
    let lines: Vec<u64> = check
        .errors
        .iter()
        .filter(|e| e.field == "reference")
        .map(|e| e.line)
        .collect();
    assert_eq!(lines, vec![3, 5, 6, 7], "{:#?}", check.errors);
}
