//! `transfer send` whose intent the journal cannot record under the repeat check: nothing is
//! sent, and the command says "never sent" only when the journal proves it. A write that
//! failed in a way that proves nothing (here a trigger's abort, as an I/O error would) may
//! have left an entry that a recovery sends, and the command says so.

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_whose_intent_and_settlement_fail_unproven_says_a_recovery_may_send_it() {
    let (sb, env) = lenient_sandbox_with_journal("intent-not-recorded.sqlite").await;
    let body = temp_file("intent-not-recorded.json", &cash_body("60"))
        .display()
        .to_string();
    // The journal exists (its tables written), then refuses every new entry.
    let listed = whish(&["journal", "list"], &env).await;
    assert_eq!(listed.code, 0, "{listed:?}");
    sql_on_journal(
        &env,
        "CREATE TRIGGER whish_test_refuse BEFORE INSERT ON whish_journal_entries \
         BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
    )
    .await;
    let sent = whish(
        &["transfer", "send", "--body", &body, "--request-id", "5501"],
        &env,
    )
    .await;
    assert_ne!(sent.code, 0, "{sent:?}");
    assert!(sb.transfers().is_empty(), "nothing sent: {sent:?}");
    assert!(
        sent.stderr
            .contains("could not be recorded before its send")
            && sent.stderr.contains("not sent by this command")
            && sent.stderr.contains("whish journal recover")
            && sent.stderr.contains("whish journal abandon 5501"),
        "says what may still send it: {}",
        sent.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_that_cannot_record_its_unsent_entry_afresh_says_a_recovery_may_send_it() {
    let (sb, env) = lenient_sandbox_with_journal("intent-not-afresh.sqlite").await;
    let body = temp_file("intent-not-afresh.json", &cash_body("65"))
        .display()
        .to_string();
    let listed = whish(&["journal", "list"], &env).await;
    assert_eq!(listed.code, 0, "{listed:?}");
    // Intents are refused; an entry recorded never sent is not.
    sql_on_journal(
        &env,
        "CREATE TRIGGER whish_test_refuse BEFORE INSERT ON whish_journal_entries \
         WHEN NEW.state = 'intended' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
    )
    .await;
    let send = ["transfer", "send", "--body", &body, "--request-id", "5502"];
    // The first send's intent fails; given back, the key is recorded never sent, and the
    // journal proves nothing sends it: the command warns of nothing more.
    let first = whish(&send, &env).await;
    assert_ne!(first.code, 0, "{first:?}");
    assert!(
        !first.stderr.contains("whish journal recover"),
        "{}",
        first.stderr
    );
    // The second records that entry afresh under the check, which fails in a way that proves
    // nothing: its entry is not known never sent.
    let second = whish(&send, &env).await;
    assert_ne!(second.code, 0, "{second:?}");
    assert!(sb.transfers().is_empty(), "nothing sent: {second:?}");
    assert!(
        second.stderr.contains("not sent by this command")
            && second.stderr.contains("whish journal recover")
            && second.stderr.contains("whish journal abandon 5502"),
        "says what may still send it: {}",
        second.stderr
    );
}
