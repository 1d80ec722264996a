//! A batch's first cancel of a row that never left (its connection
//! never opened: the journal records it `refused`, outcome `not-sent`) is still a first cancel
//! when the next cancel run sends it. If someone else cancelled the transfer meanwhile, the
//! service refuses the batch's cancel (`transfer.cannot_be_canceled`), and that refusal must not
//! be read as the batch's own earlier cancel having applied (it never left).

use crate::support::cancel::*;
use crate::support::*;
use whish_sandbox::Endpoint;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_that_never_left_then_someone_elses_cancel_is_not_the_batchs() {
    let s = sent_batch("notsent-other", 1).await;
    let cutoff = in_an_hour();

    // Run 1: the activity log and the status read pass; the cancel's connection is refused.
    let gate = closing_proxy(s.sb.addr(), "/woo/send/money/status");
    let (run1, rows1) = payouts_with(&s, &via(&s, gate), Some(&cutoff), "cancel-1.jsonl").await;
    assert_eq!(sandbox_status(&s.sb), ["SENT"], "setup: nothing applied");
    assert!(
        request_ids(&s.sb, Endpoint::TransferCancel).is_empty(),
        "setup: no cancel reached the sandbox"
    );
    assert_eq!(run1.code, 3, "setup: {run1:?}");
    assert_eq!(rows1[0]["cancel"], "not-sent", "setup: {rows1:?}");
    let refused = journal_lines(&s, &["--state", "refused"]).await;
    assert!(
        refused.iter().any(|e| e["operation"] == "cancel"),
        "setup: the cancel recorded as never sent: {refused:?}"
    );

    // Run 2: someone else cancels the transfer just before the batch's cancel arrives.
    // On the address the first run's proxy let go: one base URL for both runs.
    let race = racing_proxy_at(gate, s.sb.addr(), "777000222");
    let (run2, rows2) = payouts_with(&s, &via(&s, race), Some(&cutoff), "cancel-2.jsonl").await;
    assert_eq!(sandbox_status(&s.sb), ["CANCELED_FULL"], "setup");
    let ids = request_ids(&s.sb, Endpoint::TransferCancel);
    assert_eq!(
        ids.len(),
        2,
        "setup: the other's cancel, then the batch's: {ids:?}"
    );
    assert_eq!(
        ids[0], "777000222",
        "setup: the other's applied first: {ids:?}"
    );
    let batch_cancel = ids[1].clone();
    let shown = whish(&["journal", "show", &batch_cancel], &s.env).await;
    let state = shown.json()[0]["state"].clone();
    let claimed = run2.json()["cancelled"].clone();
    assert!(
        state != "accepted" && rows2[0]["cancelled_now"] != true && claimed == 0,
        "the batch's cancel {batch_cancel} never left in run 1 and was refused in run 2 (777000222 applied first); yet the journal says {state}, the row says cancelled_now {} cancel {}, the run says cancelled {claimed} (exit {}): {shown:?}",
        rows2[0]["cancelled_now"],
        rows2[0]["cancel"],
        run2.code
    );
}
