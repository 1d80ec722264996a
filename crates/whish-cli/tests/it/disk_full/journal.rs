//! The SQLite journal of `whish payouts send` is on a disk that fills
//! up part way through the batch (a small tmpfs). The claims: nothing is sent while its intent
//! cannot be recorded; the run's results and summary never call a paid row `not-sent`, nor an
//! unpaid row `accepted`; and once space is freed, the next run pays every row exactly once and
//! writes a complete, true results file.
//!
//! Needs root (to mount a tmpfs); says so when it cannot run (and fails under CI). Covers a fault class
//! (the journal's own disk full, through the command) no earlier test drives end to end.

use std::collections::HashSet;
use std::process::Command;

use crate::support::*;

const ROWS: usize = 800;

/// Longer than the journal's own busy wait (30 s) and its retries (30 s) together.
const HANG: std::time::Duration = std::time::Duration::from_secs(150);

/// `(request_id, outcome)` of each results line.
fn outcomes(text: &str) -> Vec<(i64, String, String)> {
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f.get(2).and_then(|v| v.parse().ok()).unwrap_or(0),
                f.get(3).copied().unwrap_or_default().to_owned(),
                l.to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_whose_disk_fills_mid_batch_never_pays_unrecorded_or_mislabels_a_row() {
    let Some(mount) = whish_testkit::tmpfs_for("disk_full::journal", "256k") else {
        return;
    };
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    env.push(journal_at(&mount.0.join("journal.sqlite")));
    let file = cash_payouts_file("aid-jfull.csv", "JF", "+961705", 5, ROWS);
    let results = file.with_file_name("results.csv");
    let (file_arg, results_arg) = (file.display().to_string(), results.display().to_string());
    let mut send = payouts_cmd("send", &file_arg, "journal-full", &results_arg);
    send.extend(["--concurrency", "4"]);

    // The first run, bounded: a run that cannot write its journal must still end and say so
    // (exit 3 or 5, the unrecorded rows `not-sent`), not wait forever for a write lock.
    let first = {
        let args: Vec<String> = send.iter().map(|s| (*s).to_owned()).collect();
        let env = env.clone();
        tokio::task::spawn_blocking(move || {
            let mut child = Command::new(env!("CARGO_BIN_EXE_whish"))
                .args(&args)
                .envs(env.iter().map(|(k, v)| (k, v)))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn whish");
            let started = std::time::Instant::now();
            let mut hung = false;
            while child.try_wait().expect("wait").is_none() {
                if started.elapsed() > HANG {
                    hung = true;
                    child.kill().expect("SIGKILL"); // what an operator does to a stuck run
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            let out = child.wait_with_output().expect("output");
            (
                hung,
                Run {
                    code: out.status.code().unwrap_or(-1),
                    stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                    stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                },
            )
        })
        .await
        .expect("join")
    };
    let (hung, first) = first;
    let paid: HashSet<i64> = sb.transfers().iter().map(|t| t.request_id).collect();
    eprintln!(
        "first run: exit {}, {} of {ROWS} paid\nstdout: {}\nstderr: {}",
        first.code,
        paid.len(),
        first.stdout,
        first.stderr.chars().take(3000).collect::<String>()
    );
    let text = std::fs::read_to_string(&results).unwrap_or_default();
    let mut lies = Vec::new();
    if hung {
        lies.push(format!(
            "the run with a full journal disk never ended: killed after {HANG:?}, with {} rows paid, no summary and no exit status",
            paid.len()
        ));
    }
    for (id, outcome, line) in outcomes(&text) {
        match outcome.as_str() {
            "accepted" if !paid.contains(&id) => {
                lies.push(format!("accepted, not at the service: {line}"))
            }
            "not-sent" | "refused" if paid.contains(&id) => {
                lies.push(format!("{outcome}, but paid at the service: {line}"))
            }
            _ => {}
        }
    }
    if !hung && first.code != 5 {
        lies.push(format!(
            "a run that could not write its journal went on to the end (exit {}, not 5: stopped)",
            first.code
        ));
    }
    if first.code == 0 && paid.len() < ROWS {
        lies.push(format!("exit 0 with {} of {ROWS} paid", paid.len()));
    }
    if first.stderr.contains("nothing was sent") && !paid.is_empty() {
        lies.push(format!(
            "stderr says nothing was sent; {} rows were paid",
            paid.len()
        ));
    }

    if let Ok(dbg) = std::env::var("ADV7_KEEP") {
        let _ = Command::new("cp")
            .arg("-a")
            .arg(&mount.0)
            .arg(&dbg)
            .status();
        let _ = std::fs::copy(&results, format!("{dbg}.results.csv"));
    }
    // Space freed: the next run settles everything, paying nothing twice.
    let grown = Command::new("mount")
        .args(["-o", "remount,size=64m"])
        .arg(&mount.0)
        .status()
        .is_ok_and(|s| s.success());
    assert!(grown, "remount");
    // Every transfer the first run made must have had its intent in the journal before it went
    // out: the journal holds its Request-id.
    let listed = whish(&["journal", "list", "--limit", "100000"], &env).await;
    let keys: HashSet<i64> = listed
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["key"].as_str().and_then(|k| k.parse().ok()))
        .collect();
    assert!(!keys.is_empty(), "journal list: {listed:?}");
    let unrecorded: Vec<i64> = paid
        .iter()
        .filter(|id| !keys.contains(id))
        .copied()
        .collect();
    if !unrecorded.is_empty() {
        lies.push(format!(
            "{} transfer(s) made by the first run whose intent the journal never recorded (sent while it could not record): {unrecorded:?}",
            unrecorded.len()
        ));
    }
    let again = whish(&send, &env).await;
    let transfers = sb.transfers();
    let ids: HashSet<i64> = transfers.iter().map(|t| t.request_id).collect();
    eprintln!(
        "second run: exit {}, {} transfers, {} distinct\nstdout: {}",
        again.code,
        transfers.len(),
        ids.len(),
        again.stdout
    );
    assert_eq!(ids.len(), transfers.len(), "a row paid twice");
    let text = std::fs::read_to_string(&results).unwrap_or_default();
    if again.code != 0 || transfers.len() != ROWS {
        lies.push(format!(
            "the run after space was freed: exit {}, {} of {ROWS} paid: {}",
            again.code,
            transfers.len(),
            again.stderr
        ));
    }
    let accepted = outcomes(&text)
        .iter()
        .filter(|(id, o, _)| o == "accepted" && ids.contains(id))
        .count();
    if accepted != ROWS {
        lies.push(format!(
            "the results after space was freed hold {accepted} accepted rows of {ROWS}"
        ));
    }
    drop(mount);
    assert!(lies.is_empty(), "{lies:#?}");
}

/// A single `transfer send` whose SQLite journal is on a full disk: the insert is refused by
/// SQLite before it writes (it runs in this process: no answer can be lost after a commit), so
/// nothing is recorded and nothing sent: exit 2 "nothing was sent", the sandbox holds no
/// transfer, and once space is freed the same send goes out once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_whose_journal_disk_is_full_says_nothing_was_sent() {
    let Some(mount) = whish_testkit::tmpfs_for("disk_full::journal", "1m") else {
        return;
    };
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    env.push(journal_at(&mount.0.join("journal.sqlite")));
    let body = temp_file("disk-full-send.json", &cash_body("80"))
        .display()
        .to_string();
    // The journal exists (its tables written), then the disk fills to the last byte.
    let listed = whish(&["journal", "list"], &env).await;
    assert_eq!(listed.code, 0, "{listed:?}");
    mount.fill();
    let sent = whish(
        &["transfer", "send", "--body", &body, "--request-id", "4401"],
        &env,
    )
    .await;
    assert_eq!(sent.code, 2, "{sent:?}");
    assert!(
        sent.stderr.contains("not sent") || sent.stderr.contains("nothing was sent"),
        "{sent:?}"
    );
    assert!(sb.transfers().is_empty(), "nothing sent");
    std::fs::remove_file(mount.0.join("filler")).expect("free the disk");
    let again = whish(
        &["transfer", "send", "--body", &body, "--request-id", "4401"],
        &env,
    )
    .await;
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(sb.transfers().len(), 1);
}
