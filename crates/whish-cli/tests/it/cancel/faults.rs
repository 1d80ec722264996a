//! `whish payouts cancel` and `whish payouts follow-up` under the
//! faults of production (a cancel's reply lost, a proxy's page instead of a status read, a cancel
//! made by someone else meanwhile). What the commands say (exit status, the follow-up file, the
//! journal) is compared with what the sandbox holds.

use std::io::Write;
use std::net::{SocketAddr, TcpListener};

use crate::support::cancel::*;
use crate::support::*;
use serde_json::Value;
use whish_sandbox::{Endpoint, Fault};

/// One row: the transfer's status read passes (a no-op delay), the cancel is applied and its
/// reply lost (connection closed), and the status read after it is a proxy's 502 page.
async fn cancel_applied_reply_lost_status_unreadable(name: &str) -> (Sent, Run, Vec<Value>) {
    let s = sent_batch(name, 1).await;
    s.sb.inject(
        Endpoint::TransferStatus,
        Fault::Delay(std::time::Duration::ZERO),
        1,
    );
    s.sb.inject(Endpoint::TransferStatus, Fault::Page(502), 1);
    s.sb.inject(Endpoint::TransferCancel, Fault::DropReply, 1);
    let cutoff = in_an_hour();
    let (run, rows) = payouts(&s, Some(&cutoff), "cancel-1.jsonl").await;
    assert_eq!(
        sandbox_status(&s.sb),
        ["CANCELED_FULL"],
        "setup: the cancel was applied"
    );
    assert_eq!(s.sb.queued_faults(Endpoint::TransferStatus), 0, "setup");
    (s, run, rows)
}

/// The cancel was applied and its reply lost; the status read after it failed. The
/// row's `collection` is the status read *before* the cancel: "waiting", for a transfer the
/// sandbox holds cancelled. Exit 3 and `cancel: unknown` are right; "waiting" is not known.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_applied_with_its_reply_lost_is_not_written_waiting() {
    let (_s, run, rows) = cancel_applied_reply_lost_status_unreadable("lost-waiting").await;
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["cancel"], "unknown", "{rows:?}");
    assert_ne!(
        rows[0]["collection"], "waiting",
        "the sandbox holds CANCELED_FULL; the follow-up file says `waiting` (a read from before the cancel): {rows:?}"
    );
}

/// The cancel run is run again. Its recovery's status read meets a proxy's page, so
/// the earlier run's cancel stays open in the journal; the row then reads `cancelled` from the
/// activity log. Docs: "a cancel run first settles what an earlier run left open ... so that its
/// entry is not left open behind a row that now reads cancelled"; exit 0 means "every row
/// settled". Exit 0 with the cancel still open in the journal is one of the two lies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_run_does_not_exit_0_while_the_cancel_it_recovers_stays_open() {
    let (s, first, _) = cancel_applied_reply_lost_status_unreadable("recover-open").await;
    assert_eq!(first.code, 3, "{first:?}");
    assert_eq!(open_entries(&s).await.len(), 1, "setup: the cancel is open");
    // The recovery's status read by LTN: a proxy's page.
    s.sb.inject(Endpoint::TransferStatus, Fault::Page(502), 1);
    let cutoff = in_an_hour();
    let (again, rows) = payouts(&s, Some(&cutoff), "cancel-2.jsonl").await;
    let open = open_entries(&s).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(
        again.code != 0 || open.is_empty(),
        "exit {} (\"every row settled\") while the journal holds the row's cancel open: {open:?}; rows {rows:?}",
        again.code
    );
}

/// The cancel did not arrive (the connection closed before the sandbox applied it):
/// the cancel run says `unknown`, exit 3, and the journal holds the cancel open, to be sent by
/// the next recovery. `whish payouts follow-up` then says exit 0, "waiting". Docs: exit 3 for
/// `follow-up` and `cancel` when "a cancel pending, unknown or not sent". The next recovery
/// (`whish journal recover`, or any batch run on the journal) then cancels the transfer that the
/// follow-up reported waiting and settled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_does_not_exit_0_while_a_cancel_of_the_row_is_open() {
    let s = sent_batch("follow-open", 1).await;
    s.sb.inject(Endpoint::TransferCancel, Fault::DropRequest, 1);
    let cutoff = in_an_hour();
    let (first, rows) = payouts(&s, Some(&cutoff), "cancel-1.jsonl").await;
    assert_eq!(first.code, 3, "setup: {first:?}");
    assert_eq!(rows[0]["cancel"], "unknown", "setup: {rows:?}");
    assert_eq!(sandbox_status(&s.sb), ["SENT"], "setup: nothing applied");
    let open = open_entries(&s).await;
    assert_eq!(open.len(), 1, "setup: the cancel is open: {open:?}");

    let (follow, rows) = payouts(&s, None, "follow-up.jsonl").await;
    let follow_code = follow.code;
    let follow_rows = rows.clone();
    // What happens next without any cancel command: the journal's recovery sends it.
    let recover = whish(&["journal", "recover"], &s.env).await;
    let after = sandbox_status(&s.sb);
    assert_ne!(
        follow_code, 0,
        "follow-up exit 0, rows {follow_rows:?}, while the journal held the row's cancel open ({open:?}); `whish journal recover` (exit {}) then left the transfer {after:?}",
        recover.code
    );
}

/// A cancel of this batch that applied and was settled by the next cancel run's
/// recovery is reported as this batch's cancel by no run: the first says `cancelled_now:
/// false` (its reply was lost), the second reads the row from the activity log and says
/// `cancelled_now: false` and no `cancel`, though the journal holds the cancel accepted.
/// Docs (`FollowUpRow::cancelled_now`): "True when this follow-up cancelled it (or an earlier one
/// did, as the journal says)". Summed over the runs, `cancelled` is 0 for 1 cancel applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_settled_by_recovery_is_reported_as_the_batchs_cancel() {
    let (s, first, rows1) = cancel_applied_reply_lost_status_unreadable("recovered").await;
    assert_eq!(first.code, 3, "{first:?}");
    let cutoff = in_an_hour();
    let (again, rows2) = payouts(&s, Some(&cutoff), "cancel-2.jsonl").await;
    assert_eq!(again.code, 0, "{again:?}");
    assert!(open_entries(&s).await.is_empty(), "settled by recovery");
    let cancels = whish(&["journal", "list", "--state", "accepted"], &s.env).await;
    let accepted_cancels = cancels
        .stdout
        .lines()
        .filter(|l| l.contains("\"cancel\""))
        .count();
    assert_eq!(accepted_cancels, 1, "setup: {cancels:?}");
    let claimed = [&first, &again]
        .iter()
        .map(|r| r.json()["cancelled"].as_u64().unwrap_or(0))
        .sum::<u64>();
    assert!(
        rows2[0]["cancelled_now"] == true || rows1[0]["cancelled_now"] == true,
        "the batch's cancel applied (journal: accepted; sandbox: {:?}); run 1 row {:?}, run 2 row {:?}; `cancelled` summed over the runs: {claimed}",
        sandbox_status(&s.sb),
        rows1[0],
        rows2[0]
    );
}

// ---------------------------------------------------------------------------------------------
// Probe 5: someone else (an operator's `whish transfer cancel`, the account's back office)
// cancels the transfer between the batch's status read and its cancel. A proxy in front of the
// sandbox makes that race deterministic: on the batch's cancel it first sends the same cancel
// with another Request-id, then forwards the batch's own.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_made_by_someone_else_is_not_recorded_as_the_batchs() {
    let mut s = sent_batch("operator", 1).await;
    let proxy = racing_proxy(s.sb.addr(), "777000111");
    for (k, v) in s.env.iter_mut() {
        if k == "WHISH_TRANSFER_BASE_URL" {
            *v = v.replace(&s.sb.addr().to_string(), &proxy.to_string());
        }
    }
    let cutoff = in_an_hour();
    let (run, rows) = payouts(&s, Some(&cutoff), "cancel.jsonl").await;
    assert_eq!(sandbox_status(&s.sb), ["CANCELED_FULL"], "setup");
    let ids = request_ids(&s.sb, Endpoint::TransferCancel);
    assert_eq!(
        ids.len(),
        2,
        "setup: the operator's cancel, then the batch's: {ids:?}"
    );
    assert_eq!(
        ids[0], "777000111",
        "setup: the operator's applied first: {ids:?}"
    );
    let batch_cancel = ids[1].clone();
    let entry = whish(&["journal", "show", &batch_cancel], &s.env).await;
    let state = entry.json()[0]["state"].clone();
    assert!(
        !state.is_null(),
        "setup: the batch's cancel is in the journal: {entry:?}"
    );
    assert!(
        state != "accepted" && rows[0]["cancelled_now"] != true,
        "the service refused the batch's cancel {batch_cancel} (the operator's 777000111 applied); yet the journal says {state} and the row says cancelled_now {} cancel {} (exit {}): {entry:?}",
        rows[0]["cancelled_now"],
        rows[0]["cancel"],
        run.code
    );
}

// ---------------------------------------------------------------------------------------------
// Probe 8: the cancel reaches the sandbox and is applied; the proxy in front then answers it
// with its own HTML 403 page (after a timed-out upstream attempt) or with the JSON reply cut
// short. Nothing may be told as refused or cancelled-by-nobody: the run says unknown (exit 3),
// the next run settles it, one cancel on the wire, nothing left open.

#[derive(Clone, Copy, PartialEq, Debug)]
enum Spoil {
    Page403,
    Truncated,
}

fn spoiling_proxy(upstream: SocketAddr, spoil: Spoil, cancels: usize) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    let left = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(cancels));
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            let left = left.clone();
            std::thread::spawn(move || {
                let Ok((head, body)) = read_request(&mut c) else {
                    return;
                };
                let Ok(resp) = forward(upstream, &head, &body, None) else {
                    return;
                };
                let spoiled = head.contains("/woo/cancel/send/money")
                    && left
                        .fetch_update(
                            std::sync::atomic::Ordering::SeqCst,
                            std::sync::atomic::Ordering::SeqCst,
                            |n| n.checked_sub(1),
                        )
                        .is_ok();
                if !spoiled {
                    let _ = c.write_all(&resp);
                    return;
                }
                let reply = match spoil {
                    Spoil::Page403 => {
                        let page =
                            "<html><body><h1>403 Forbidden</h1>upstream timed out</body></html>";
                        format!(
                            "HTTP/1.1 403 Forbidden\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                            page.len()
                        )
                        .into_bytes()
                    }
                    Spoil::Truncated => {
                        let at = resp
                            .windows(4)
                            .position(|w| w == b"\r\n\r\n")
                            .map_or(0, |i| i + 4);
                        let json = &resp[at..];
                        let cut = &json[..json.len() / 2];
                        let mut r = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            cut.len()
                        )
                        .into_bytes();
                        r.extend_from_slice(cut);
                        r
                    }
                };
                let _ = c.write_all(&reply);
            });
        }
    });
    addr
}

async fn spoiled_cancel_then_again(spoil: Spoil) {
    let name = format!("spoil-{spoil:?}").to_lowercase();
    let mut s = sent_batch(&name, 3).await;
    let proxy = spoiling_proxy(s.sb.addr(), spoil, 1);
    for (k, v) in s.env.iter_mut() {
        if k == "WHISH_TRANSFER_BASE_URL" {
            *v = v.replace(&s.sb.addr().to_string(), &proxy.to_string());
        }
    }
    let cutoff = in_an_hour();
    let (first, rows1) = payouts(&s, Some(&cutoff), "cancel-1.jsonl").await;
    let open1 = open_entries(&s).await;
    let (again, rows2) = payouts(&s, Some(&cutoff), "cancel-2.jsonl").await;
    let open2 = open_entries(&s).await;
    let status = sandbox_status(&s.sb);
    let ids = request_ids(&s.sb, Endpoint::TransferCancel);
    let distinct: std::collections::BTreeSet<_> = ids.iter().collect();
    let report = format!(
        "{spoil:?}: run 1 exit {} rows {rows1:?} open {open1:?}; run 2 exit {} rows {rows2:?} open {open2:?}; sandbox {status:?}; cancel ids {ids:?}",
        first.code, again.code
    );
    assert_eq!(status, ["CANCELED_FULL"; 3], "{report}");
    assert_eq!(distinct.len(), 3, "one cancel per row: {report}");
    assert_eq!(first.code, 3, "{report}");
    let spoiled: Vec<_> = rows1.iter().filter(|r| r["cancel"] != "accepted").collect();
    assert_eq!(spoiled.len(), 1, "{report}");
    assert_eq!(spoiled[0]["cancel"], "unknown", "never refused: {report}");
    assert_eq!(
        spoiled[0]["collection"], "cancelled",
        "read after: {report}"
    );
    assert_eq!(open1.len(), 1, "{report}");
    assert_eq!(again.code, 0, "{report}");
    assert!(open2.is_empty(), "{report}");
    assert!(
        rows2.iter().all(|r| r["collection"] == "cancelled"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_applied_then_answered_by_a_proxy_403_page_is_unknown_then_settled() {
    spoiled_cancel_then_again(Spoil::Page403).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_applied_then_answered_with_truncated_json_is_unknown_then_settled() {
    spoiled_cancel_then_again(Spoil::Truncated).await;
}

/// A cancel left open by a run under one `--reason`, still open after the next run's recovery
/// (its status read met a page), is sent again by that run with its own recorded bytes, though
/// the run gives another reason: the same cancel, settled, never "not sent".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_cancel_is_sent_again_with_its_own_reason() {
    let s = sent_batch("other-reason", 1).await;
    let cutoff = in_an_hour();
    let with_reason = |out: &str, reason: &str| {
        let (mut args, results) = payouts_args(&s, Some(&cutoff), out);
        args.extend(["--reason".to_owned(), reason.to_owned()]);
        (args, results)
    };
    s.sb.inject(Endpoint::TransferCancel, Fault::DropRequest, 1);
    let (args, _) = with_reason("cancel-1.jsonl", "not collected in two weeks");
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let first = whish(&a, &s.env).await;
    assert_eq!(first.code, 3, "setup: {first:?}");
    assert_eq!(open_entries(&s).await.len(), 1, "setup: the cancel is open");

    // The recovery's status read meets a page: the cancel stays open into the rows.
    s.sb.inject(Endpoint::TransferStatus, Fault::Page(502), 1);
    let (args, results) = with_reason("cancel-2.jsonl", "a different reason");
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let again = whish(&a, &s.env).await;
    let rows = rows_of(&results);
    let ids = request_ids(&s.sb, Endpoint::TransferCancel);
    let report = format!("{again:?}; rows {rows:?}; cancel ids {ids:?}");
    assert_eq!(again.code, 0, "{report}");
    assert_eq!(rows[0]["cancel"], "accepted", "{report}");
    assert_eq!(rows[0]["cancelled_now"], true, "{report}");
    assert_eq!(sandbox_status(&s.sb), ["CANCELED_FULL"], "{report}");
    assert!(open_entries(&s).await.is_empty(), "{report}");
    assert!(ids.iter().all(|i| *i == ids[0]), "one cancel key: {report}");
    let bodies: Vec<String> =
        s.sb.requests()
            .into_iter()
            .filter(|r| r.endpoint == Endpoint::TransferCancel)
            .map(|r| r.body)
            .collect();
    assert!(
        bodies
            .iter()
            .all(|b| b.contains("not collected in two weeks")),
        "the recorded bytes, its first reason: {bodies:?}"
    );
}

/// A cancel left open (applied, its reply lost) behind a row whose
/// LTN is known to neither the send's journal entry (here its references are emptied; in
/// production, a row whose first send met `transfer.already.done`) nor the row's read (the
/// activity log lists it CANCELLED, and carries no LTN). The cancel run's recovery cannot settle
/// it (its status read meets a proxy's page). The row said `cancel: not-sent`, "no LTN number is
/// known", though the open cancel holds its LTN in its own recorded body, may have been applied
/// (it was), and was left open for every later run. It is sent again with its own bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_cancel_is_settled_when_the_row_has_no_ltn_known() {
    let (s, first, _) = cancel_applied_reply_lost_status_unreadable("no-ltn").await;
    assert_eq!(first.code, 3, "setup: {first:?}");
    assert_eq!(open_entries(&s).await.len(), 1, "setup: the cancel is open");
    let emptied = journal_sql(
        &s,
        "UPDATE whish_journal_entries SET refs = '{}' WHERE operation = 'send'",
    )
    .await;
    assert_eq!(emptied, 1, "setup: the send's references emptied");
    // The recovery's status read by LTN: a proxy's page; the cancel stays open past it.
    s.sb.inject(Endpoint::TransferStatus, Fault::Page(502), 1);
    let cutoff = in_an_hour();
    let (again, rows) = payouts(&s, Some(&cutoff), "cancel-2.jsonl").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        rows[0]["cancel"],
        "accepted",
        "the open cancel (applied: {:?}) was reported {} ({}), exit {}",
        sandbox_status(&s.sb),
        rows[0]["cancel"],
        rows[0]["message"],
        again.code
    );
    assert_eq!(rows[0]["cancelled_now"], true, "{rows:?}");
    assert_eq!(again.code, 0, "{again:?}");
    assert!(open_entries(&s).await.is_empty(), "the cancel is settled");
    assert_eq!(sandbox_status(&s.sb), ["CANCELED_FULL"]);
    assert_eq!(
        request_ids(&s.sb, Endpoint::TransferCancel)
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        1,
        "one cancel, under one Request-id"
    );
}
