//! Through the command: `whish journal recover
//! --retry-needs-operator`, and `whish payouts cancel` of a row whose LTN is unknown (an open
//! cancel sent again with its recorded bytes). What the commands say (exit status, the
//! follow-up file, `journal list --open`) against what the sandbox holds.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::cancel::*;
use crate::support::*;
use whish_sandbox::{Endpoint, Fault};

/// A one-row batch whose send never arrived (the connection closed before the sandbox applied
/// it): the row's entry is open; its Request-id.
async fn batch_never_arrived(name: &str) -> (Sent, String) {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    let file = cash_payouts_file(&format!("{name}.csv"), "A10-", "+961707", 4, 1);
    let dir = file.parent().expect("dir").to_owned();
    env.push(journal_at(&dir.join("journal.sqlite")));
    let file = file.display().to_string();
    let results = dir.join("send.csv").display().to_string();
    sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
    let mut args = vec!["--retries", "0"];
    args.extend(payouts_cmd("send", &file, name, &results));
    let sent = whish(&args, &env).await;
    assert_ne!(
        sent.code, 0,
        "setup: the send's outcome is unknown: {sent:?}"
    );
    assert!(sb.transfers().is_empty(), "setup: never arrived");
    let s = Sent {
        sb,
        env,
        file,
        dir,
        batch: name.to_owned(),
    };
    let open = open_entries(&s).await;
    assert_eq!(open.len(), 1, "setup: {open:?}");
    assert_eq!(open[0]["state"], "may-have-arrived", "setup: {open:?}");
    let key = open[0]["key"].as_str().expect("key").to_owned();
    (s, key)
}

/// LIE 1, end to end. The batch row's send never arrived; someone else's transfer (90 USD,
/// sent through another journal, `whish transfer send --request-id`) then takes its
/// Request-id. The entry goes to the operator; the person's `recover --retry-needs-operator`
/// reads the status by Request-id, finds the other transfer, exits 0 and records the row's send
/// accepted. The next `payouts cancel` then cancels SOMEONE ELSE'S transfer as the batch's row,
/// and says the batch cancelled it. The same collision while the entry is open is caught (the
/// resend meets `transfer.already.done` and the activity log shows another amount).
/// Someone else, with their own journal and their own numeric reference, sends a 90 USD
/// transfer under the row's Request-id `key`.
async fn someone_elses_transfer(s: &Sent, key: &str) {
    let mut theirs_env = s.env.clone();
    theirs_env.retain(|(k, _)| k != "WHISH_JOURNAL");
    theirs_env.push(journal_at(&s.dir.join("theirs.sqlite")));
    let body = temp_file("theirs.json", &cash_body("90"))
        .display()
        .to_string();
    let theirs = whish(
        &["transfer", "send", "--body", &body, "--request-id", key],
        &theirs_env,
    )
    .await;
    assert_eq!(theirs.code, 0, "setup: someone else's transfer: {theirs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_row_does_not_take_someone_elses_transfer_and_cancel_it() {
    let (s, key) = batch_never_arrived("collide").await;
    someone_elses_transfer(&s, &key).await;
    assert_eq!(s.sb.transfers().len(), 1, "setup");
    assert_eq!(s.sb.transfers()[0].request_id.to_string(), key, "setup");

    let late = whish(&["journal", "recover", "--deadline-hours", "0"], &s.env).await;
    assert_eq!(late.code, 3, "setup: {late:?}");
    assert_eq!(
        open_entries(&s).await[0]["state"],
        "needs-operator",
        "setup"
    );

    let retry = whish(&["journal", "recover", "--retry-needs-operator"], &s.env).await;
    let open = open_entries(&s).await;
    let cutoff = in_an_hour();
    let (cancel, rows) = payouts(&s, Some(&cutoff), "cancel.jsonl").await;
    let sandbox = s.sb.transfers();
    let report = format!(
        "retry exit {} stdout {} stderr {}; open after it {open:?}; payouts cancel exit {} rows {rows:?}; sandbox {:?}",
        retry.code,
        retry.stdout,
        retry.stderr,
        cancel.code,
        sandbox
            .iter()
            .map(|t| (t.request_id, t.total.to_string(), t.status.clone()))
            .collect::<Vec<_>>()
    );
    eprintln!("collide: {report}");
    // The truth: the sandbox never held the row's transfer; only someone else's 90 USD one.
    assert_eq!(sandbox.len(), 1, "{report}");
    assert_eq!(
        sandbox[0].status, "SENT",
        "the batch's cancel run cancelled someone else's transfer: {report}"
    );
    assert_ne!(retry.code, 0, "{report}");
    assert_ne!(rows[0]["cancelled_now"], true, "{report}");
}

/// LIE 2 through the command, with SIGKILL. `recover --retry-needs-operator` is killed while
/// its status read of a needs-operator send is in flight (the service stalls). The same command
/// run again at once by the same host: an open entry whose holder is a dead process of this
/// host is taken over at once (`taken_from_dead`); a needs-operator one is neither taken nor
/// said to be held: the command says it "waits for an operator" (exit 3), the person's word
/// given a moment ago silently not acted on, for the length of the dead process's lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_killed_mid_flight_is_taken_over_or_said_held() {
    let (s, key) = batch_never_arrived("killed").await;
    let late = whish(&["journal", "recover", "--deadline-hours", "0"], &s.env).await;
    assert_eq!(late.code, 3, "setup: {late:?}");
    s.sb.inject(Endpoint::TransferStatus, Fault::Stall, 1);
    let before = s.sb.requests().len();
    let mut child = whish_command(
        &[
            "--retries",
            "0",
            "journal",
            "recover",
            "--retry-needs-operator",
        ],
        &s.env,
        None,
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn");
    let started = Instant::now();
    while s.sb.requests().len() == before && started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        s.sb.requests().len() > before,
        "setup: the status read is in flight"
    );
    child.kill().expect("SIGKILL");
    let _ = child.wait();

    let again = whish(&["journal", "recover", "--retry-needs-operator"], &s.env).await;
    let open = open_entries(&s).await;
    let report = format!(
        "run 2 exit {} stdout {} stderr {}; open {open:?}; sandbox {:?}",
        again.code,
        again.stdout,
        again.stderr,
        s.sb.transfers()
    );
    eprintln!("killed: {report}");
    let json = again.json();
    let taken = json["report"]["taken_from_dead"].as_u64().unwrap_or(0);
    let held = json["report"]["held_elsewhere"]
        .as_array()
        .map_or(0, Vec::len);
    assert!(
        taken == 1 || held == 1,
        "entry {key}, held by a killed process, neither taken over nor said to be held: {report}"
    );
}

/// Held up (the LTN change): a row's cancel is left open (a proxy's page answered it, not
/// applied), the receiver then collects the cash, and the send's references lose the LTN. The
/// next cancel run's recovery cannot read the status (a page); the row's LTN is not known, so
/// the open cancel is sent again with its recorded bytes: refused, the row `collected`, not
/// cancelled by the batch, nothing left open, and the sandbox holds RECEIVED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_cancel_of_a_collected_row_without_ltn_is_told_refused() {
    let s = sent_batch("ltn-collected", 1).await;
    let ltn = s.sb.transfers()[0].ltn_number.clone();
    s.sb.inject(Endpoint::TransferCancel, Fault::Page(502), 1);
    s.sb.inject(Endpoint::TransferStatus, Fault::Delay(Duration::ZERO), 1);
    s.sb.inject(Endpoint::TransferStatus, Fault::Page(502), 1);
    let cutoff = in_an_hour();
    let (first, rows1) = payouts(&s, Some(&cutoff), "cancel-1.jsonl").await;
    assert_eq!(
        sandbox_status(&s.sb),
        ["SENT"],
        "setup: not applied: {first:?}"
    );
    assert_eq!(
        open_entries(&s).await.len(),
        1,
        "setup: open cancel: {rows1:?}"
    );
    s.sb.collect_cash(&ltn).await.expect("setup: collected");
    let emptied = journal_sql(
        &s,
        "UPDATE whish_journal_entries SET refs = '{}' WHERE operation = 'send'",
    )
    .await;
    assert_eq!(emptied, 1, "setup");
    s.sb.inject(Endpoint::TransferStatus, Fault::Page(502), 1);
    let (again, rows) = payouts(&s, Some(&cutoff), "cancel-2.jsonl").await;
    let report = format!("exit {} rows {rows:?} stderr {}", again.code, again.stderr);
    assert_eq!(sandbox_status(&s.sb), ["RECEIVED"], "{report}");
    assert_eq!(rows.len(), 1, "{report}");
    assert_eq!(rows[0]["cancel"], "refused", "{report}");
    assert_eq!(rows[0]["cancelled_now"], false, "{report}");
    assert_eq!(rows[0]["collection"], "collected", "{report}");
    assert_eq!(rows[0]["ltn_number"], ltn.as_str(), "{report}");
    assert!(open_entries(&s).await.is_empty(), "{report}");
}

/// Held up (the control of LIE 1): the same collision while the row's entry is still open. A
/// plain `journal recover` resends it, meets `transfer.already.done`, sees another amount in the
/// activity log: not confirmed, not exit 0; the cancel run then sends no cancel and leaves
/// someone else's transfer alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_row_does_not_take_someone_elses_transfer() {
    let (s, key) = batch_never_arrived("collide-open").await;
    someone_elses_transfer(&s, &key).await;
    let plain = whish(&["journal", "recover"], &s.env).await;
    assert_ne!(plain.code, 0, "{plain:?}");
    let open = open_entries(&s).await;
    assert_eq!(open.len(), 1, "{open:?}");
    assert_ne!(open[0]["state"], "accepted", "{open:?}");
    let cutoff = in_an_hour();
    let (cancel, rows) = payouts(&s, Some(&cutoff), "cancel.jsonl").await;
    assert_eq!(sandbox_status(&s.sb), ["SENT"], "{cancel:?} {rows:?}");
    assert!(request_ids(&s.sb, Endpoint::TransferCancel).is_empty());
    assert_ne!(rows[0]["cancelled_now"], true, "{rows:?}");
}
