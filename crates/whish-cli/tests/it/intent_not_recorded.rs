//! `transfer send` whose intent the journal cannot record under the repeat check: nothing is
//! sent, and the command says "never sent" only when the journal proves it. A write that
//! failed in a way that proves nothing (here a trigger's abort, as an I/O error would) may
//! have left an entry that a recovery sends, and the command says so.

use whish_sandbox::Sandbox;

use crate::support::*;

/// A sandbox, the environment of a command whose journal (its tables written) refuses each new
/// entry `when` (SQL, empty: every one), and a body file.
async fn journal_refusing(name: &str, when: &str) -> (Sandbox, Vec<(String, String)>, String) {
    let (sb, env) = lenient_sandbox_with_journal(&format!("{name}.sqlite")).await;
    let body = temp_file(&format!("{name}.json"), &cash_body("60"))
        .display()
        .to_string();
    let listed = whish(&["journal", "list"], &env).await;
    assert_eq!(listed.code, 0, "{listed:?}");
    sql_on_journal(
        &env,
        &format!(
            "CREATE TRIGGER whish_test_refuse BEFORE INSERT ON whish_journal_entries {when} \
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
        ),
    )
    .await;
    (sb, env, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_whose_intent_and_settlement_fail_unproven_says_a_recovery_may_send_it() {
    // Every new entry is refused.
    let (sb, env, body) = journal_refusing("intent-not-recorded", "").await;
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
    // Intents are refused; an entry recorded never sent is not.
    let (sb, env, body) =
        journal_refusing("intent-not-afresh", "WHEN NEW.state = 'intended'").await;
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
