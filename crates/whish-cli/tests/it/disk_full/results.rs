//! The results file of `whish payouts send` is on a disk that fills up
//! part way through the batch (a small tmpfs). The run stops, having paid the rows before the
//! disk filled. What it says must be true: not exit 2 with "nothing was sent" (the docs' and
//! `usage()`'s word for "refused before sending") while the service holds transfers it just
//! made; and once space is freed, the next run pays nothing twice and writes a complete, true
//! results file.
//!
//! Needs root (to mount a tmpfs); says so when it cannot run (and fails under CI).

use std::path::Path;
use std::process::Command;

use crate::support::*;
use whish_sandbox::Sandbox;

const ROWS: usize = 120;

/// Where a run that acted (`truth`: what the service holds from it) says that nothing was sent:
/// on stderr, or by exit 2 ("bad rows or usage: nothing sent", docs/cli.md).
fn said_nothing_sent(run: &Run, truth: &str) -> Vec<String> {
    let mut lies = Vec::new();
    if run.stderr.contains("nothing was sent") {
        lies.push(format!("stderr says nothing was sent, but {truth}"));
    }
    if run.code == 2 {
        lies.push(format!("exit 2 (nothing sent), but {truth}"));
    }
    lies
}

/// Fill `dir` with a file, leaving about `leave` bytes free.
fn fill_leaving(dir: &Path, leave: u64) {
    use std::io::Write;
    let free = free_bytes(dir);
    let mut f = std::fs::File::create(dir.join("filler")).expect("filler");
    let block = vec![0u8; 4096];
    let mut written = 0u64;
    while written + leave < free {
        if f.write_all(&block).is_err() {
            break;
        }
        written += 4096;
    }
    let _ = f.sync_all();
}

fn free_bytes(dir: &Path) -> u64 {
    let out = Command::new("df")
        .args(["-B1", "--output=avail"])
        .arg(dir)
        .output()
        .expect("df");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_results_file_on_a_full_disk_never_says_nothing_was_sent_after_paying_rows() {
    let Some(mount) = whish_testkit::tmpfs_for("disk_full::results", "256k") else {
        return;
    };
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    let file = cash_payouts_file("aid-full.csv", "FULL", "+9617044", 4, ROWS);
    // The journal on an ordinary disk: only the results file runs out of space.
    let journal_dir = file.parent().expect("dir").to_owned();
    env.push(journal_at(&journal_dir.join("payouts.sqlite")));
    // Room for the header and a few dozen result lines, not for all of them.
    fill_leaving(&mount.0, 6 * 1024);
    let results = mount.0.join("results.csv");
    let (file_arg, results_arg) = (file.display().to_string(), results.display().to_string());
    let mut send = payouts_cmd("send", &file_arg, "results-full", &results_arg);
    send.extend(["--concurrency", "4"]);

    let first = whish(&send, &env).await;
    let paid = sb.transfers().len();
    eprintln!(
        "first run: exit {}, {paid} of {ROWS} paid at the service\nstdout: {}\nstderr: {}",
        first.code, first.stdout, first.stderr
    );
    assert!(
        paid > 0 && paid < ROWS,
        "the disk must fill part way: {paid} of {ROWS} paid"
    );
    // The truth: the service made `paid` transfers. Exit 2 is "bad rows or usage (nothing
    // sent)" (docs/cli.md, docs/payouts.md), and stderr must not say nothing was sent.
    let lies = said_nothing_sent(&first, &format!("the service made {paid} transfers"));

    // Space freed: the next run writes every row, truthfully, and pays nothing twice.
    let _ = std::fs::remove_file(mount.0.join("filler"));
    let again = whish(&send, &env).await;
    assert_eq!(again.code, 0, "{again:?}");
    let transfers = sb.transfers();
    assert_eq!(transfers.len(), ROWS, "every row paid exactly once");
    let text = std::fs::read_to_string(&results).expect("results");
    assert_eq!(
        text.lines().count(),
        ROWS + 1,
        "a header and one line a row"
    );
    assert_eq!(
        text.lines()
            .skip(1)
            .filter(|l| l.contains(",accepted,"))
            .count(),
        ROWS
    );
    drop(mount);
    assert!(lies.is_empty(), "{lies:#?}");
}

/// The same for `whish payouts cancel`: its results file fills up part way, after some cancels
/// were applied (money given back to the account). Exit 2 "nothing was sent" would tell the
/// operator no cancel went out; the next run, with space, must tell every row as cancelled, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_whose_results_file_fills_up_never_says_nothing_was_sent_after_cancelling() {
    let Some(mount) = whish_testkit::tmpfs_for("disk_full::results", "256k") else {
        return;
    };
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    let file = cash_payouts_file("aid-full.csv", "FULL", "+9617044", 4, ROWS);
    let dir = file.parent().expect("dir").to_owned();
    env.push(journal_at(&dir.join("payouts.sqlite")));
    let file_arg = file.display().to_string();
    let sent_results = dir.join("results.csv").display().to_string();
    let send = payouts_cmd("send", &file_arg, "cancel-full", &sent_results);
    let sent = whish(&send, &env).await;
    assert_eq!(sent.code, 0, "{sent:?}");
    assert_eq!(sb.transfers().len(), ROWS);

    fill_leaving(&mount.0, 6 * 1024);
    let results = mount.0.join("cancel.csv");
    let results_arg = results.display().to_string();
    let later = (time::OffsetDateTime::now_utc() + time::Duration::hours(1))
        .format(time::macros::format_description!(
            "[year]-[month]-[day] [hour]:[minute]:[second]"
        ))
        .expect("format");
    let mut cancel: Vec<&str> = vec![
        "payouts",
        "cancel",
        &file_arg,
        "--batch",
        "cancel-full",
        "--uncollected-before",
        &later,
        "--reason",
        "not collected in time",
        "--results",
        &results_arg,
    ];
    cancel.extend(SENDER);
    let first = whish(&cancel, &env).await;
    let cancelled = |sb: &Sandbox| {
        sb.transfers()
            .iter()
            .filter(|t| t.status == "CANCELED_FULL")
            .count()
    };
    let done = cancelled(&sb);
    eprintln!(
        "first cancel run: exit {}, {done} of {ROWS} cancelled at the service\nstdout: {}\nstderr: {}",
        first.code, first.stdout, first.stderr
    );
    assert!(
        done > 0 && done < ROWS,
        "the disk must fill part way: {done} of {ROWS} cancelled"
    );
    let mut lies = said_nothing_sent(&first, &format!("this run cancelled {done} transfers"));

    // Space freed at once (the operator reruns straight away, within the journal's lease).
    let _ = std::fs::remove_file(mount.0.join("filler"));
    let again = whish(&cancel, &env).await;
    let text = std::fs::read_to_string(&results).unwrap_or_default();
    let left = ROWS - cancelled(&sb);
    eprintln!(
        "second cancel run: exit {}, {left} left uncancelled\nstdout: {}\nstderr: {}\nnot cancelled: {:?}",
        again.code,
        again.stdout,
        again.stderr,
        text.lines()
            .skip(1)
            .filter(|l| !l.contains(",cancelled,"))
            .collect::<Vec<_>>()
    );
    // Exit 0 says every row asked for is settled; a row whose cancel is still open (unknown)
    // and which still waits at the service is exit 3 ("run it again").
    if again.code == 0 && left > 0 {
        lies.push(format!(
            "the second run exits 0, but {left} row(s) still wait at the service with their cancel open in the journal (the first run's in-flight cancels were dropped when the results write failed)"
        ));
    }
    assert_eq!(
        text.lines().count(),
        ROWS + 1,
        "a header and one line a row"
    );
    drop(mount);
    assert!(lies.is_empty(), "{lies:#?}");
}
