//! Through the command: `whish journal inbox` lists the callback receiver's changes not yet
//! handed on, and `whish journal hand-on KEY` puts one back for the next worker, on a person's
//! word.

use std::time::Duration;

use serde_json::Value;
use whish::journal::{Journal, Recorded, Service};

use crate::support::*;

fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[tokio::test]
async fn the_inbox_lists_what_waits_and_a_person_hands_a_change_on_again() {
    let path = temp_file("inbox.sqlite", "");
    let _ = std::fs::remove_file(&path);
    let env = vec![journal_at(&path)];
    let url = env[0].1.clone();
    let journal = Journal::open(&url).await.expect("journal");
    // One change failed past its deadline (waits for a person), one failed once (waits for its
    // next try), one handed on.
    for (service, key, deadline) in [
        (
            Service::HostedCollect,
            "collect:order-1:success",
            Duration::ZERO,
        ),
        (
            Service::MoneyTransfer,
            "transfer:T1:RECEIVED",
            Duration::from_secs(3600),
        ),
    ] {
        let Recorded::New(taken) = journal
            .record_change(service, key, b"{}")
            .await
            .expect("record")
        else {
            panic!("new");
        };
        // Past its deadline means older than it: recorded and failed within one millisecond, a
        // change is not yet past a deadline of zero. Let the clock move on.
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            journal
                .hand_on_failed(
                    &taken,
                    "the handler's database is down",
                    Duration::from_secs(3600),
                    deadline
                )
                .await
                .expect("failed")
        );
    }
    let Recorded::New(done) = journal
        .record_change(Service::HostedCollect, "collect:order-2:success", b"{}")
        .await
        .expect("record")
    else {
        panic!("new");
    };
    assert!(journal.handed_on(&done).await.expect("handed on"));
    journal.close().await;

    let listed = whish(&["journal", "inbox"], &env).await;
    assert_eq!(listed.code, 0, "{listed:?}");
    let rows = lines(&listed.stdout);
    let states: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["key"].as_str().expect("key"),
                r["state"].as_str().expect("state"),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("transfer:T1:RECEIVED", "waiting"),
            ("collect:order-1:success", "escalated")
        ],
        "{listed:?}"
    );
    assert_eq!(rows[1]["lastError"], "the handler's database is down");
    assert_eq!(rows[1]["attempts"], 1);

    let again = whish(&["journal", "hand-on", "collect:order-1:success"], &env).await;
    assert_eq!(again.code, 0, "{again:?}");
    let listed = whish(&["journal", "inbox"], &env).await;
    let rows = lines(&listed.stdout);
    assert!(rows.iter().all(|r| r["state"] == "waiting"), "{listed:?}");
    // A change handed on, or none: refused. One a worker holds (its backoff's lease): try again.
    let done = whish(&["journal", "hand-on", "collect:order-2:success"], &env).await;
    assert_eq!(done.code, 2, "{done:?}");
    let none = whish(&["journal", "hand-on", "collect:nothing:success"], &env).await;
    assert_eq!(none.code, 2, "{none:?}");
    let held = whish(&["journal", "hand-on", "transfer:T1:RECEIVED"], &env).await;
    assert_eq!(held.code, 3, "{held:?}");
}
