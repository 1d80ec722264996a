//! Two journals of one process on one SQLite file (a receiver and a batch, a sender and its
//! recoverer), and another process opening and closing the same file meanwhile: what the first
//! journal writes after the second opened stays in the file every process reads, and the other
//! process's close leaves the write-ahead log this one writes to in place.

use crate::support::{self, cash_send, sandbox, transfer};
use whish_journal::{Journal, Operation, Service};

const CHILD: &str = "WHISH_JOURNAL_SAME_FILE_CHILD";
const CHILD_KEY: &str = "WHISH_JOURNAL_SAME_FILE_KEY";

/// In a child process: open the journal named in the environment, print whether it holds the
/// entry named there (if one is), and close it: the last connection of a process closing, as
/// after a `whish journal list`. In the parent: does nothing.
#[tokio::test]
async fn same_file_child_opens_and_closes() {
    let Ok(url) = std::env::var(CHILD) else {
        return;
    };
    let journal = Journal::open(&url).await.expect("open");
    if let Ok(key) = std::env::var(CHILD_KEY) {
        let entry = journal
            .entry(Service::MoneyTransfer, Operation::Send, &key)
            .await
            .expect("read");
        println!("\nSAME_FILE found={}", entry.is_some());
    }
    journal.close().await;
}

/// Run the child on `url`; with `key`, whether it found that entry.
async fn child(url: &str, key: Option<String>) -> Option<bool> {
    let mut command = std::process::Command::new(std::env::current_exe().expect("exe"));
    command
        .args(support::child_test_args(
            module_path!(),
            "same_file_child_opens_and_closes",
        ))
        .env(CHILD, url);
    if let Some(key) = &key {
        command.env(CHILD_KEY, key);
    }
    let out = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("join")
        .expect("run the child");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    key.map(|_| {
        text.lines()
            .find_map(|l| l.strip_prefix("SAME_FILE found="))
            .unwrap_or_else(|| panic!("no answer: {text}"))
            == "true"
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_journal_on_the_file_leaves_the_first_ones_writes_where_all_read() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let dir =
        std::env::temp_dir().join(format!("whish-journal-same-file-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("journal.sqlite");
    let url = format!("sqlite:{}", path.display());
    let sb = sandbox().await;
    let first = Journal::open(&url).await.expect("open");
    let t = first.transfer(transfer(&sb, 0));
    let before = t.client().prepare_send(cash_send(61)).expect("prepare");
    let _ = t.send(&before).await.expect("sent");

    let second = Journal::open(&url).await.expect("open again");
    // Another process opens the file and closes it, while this one holds it open.
    child(&url, None).await;
    let wal = format!("{}-wal", path.display());
    assert!(
        std::path::Path::new(&wal).exists(),
        "another process's close deleted the log this process writes to"
    );

    let after = t.client().prepare_send(cash_send(62)).expect("prepare");
    let _ = t.send(&after).await.expect("sent");
    first.flush().await;
    assert_eq!(
        child(&url, Some(after.request_id().to_string())).await,
        Some(true),
        "a send recorded after the second open is not in the file other processes read"
    );
    second.close().await;
    first.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
