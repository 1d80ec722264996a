//! Request-ids drawn by many processes at once never repeat: each test process re-runs this
//! binary as children that print the ids they generate.

use std::collections::HashSet;
use std::process::Command;

use whish_core::RequestId;

const CHILD: &str = "WHISH_CORE_ID_CHILD";
const PROCESSES: usize = 12;
const PER_PROCESS: usize = 20_000;

/// In a child: print ids, one per line. In the parent: does nothing.
#[test]
fn child_prints_ids() {
    if std::env::var(CHILD).is_err() {
        return;
    }
    // On a line of its own: the harness writes "test child_prints_ids ... " first.
    let mut out = String::from("\n");
    for _ in 0..PER_PROCESS {
        out.push_str(&RequestId::generate().to_string());
        out.push('\n');
    }
    print!("{out}");
}

#[test]
fn ids_from_many_processes_at_once_never_repeat() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let exe = std::env::current_exe().expect("the test binary");
    // Started together, so that their clocks read the same milliseconds (the 0.2 generator,
    // epoch milliseconds x 1000 plus a process-local counter, repeated ids across them).
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    &this_module_test("child_prints_ids"),
                    "--nocapture",
                    "--test-threads",
                    "1",
                ])
                .env(CHILD, "1")
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("spawn a child")
        })
        .collect();
    let mut all = HashSet::new();
    let mut total = 0;
    for child in children {
        let out = child.wait_with_output().expect("child output");
        assert!(out.status.success());
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Ok(id) = line.trim().parse::<i64>() else {
                continue; // the test harness's own lines
            };
            assert!(id > 0, "a positive Long");
            total += 1;
            assert!(all.insert(id), "id {id} was drawn twice");
        }
    }
    assert_eq!(
        total,
        PROCESSES * PER_PROCESS,
        "every child printed its ids"
    );
}

/// The full name of a test of this module, as the harness filters it (`module::test`).
fn this_module_test(name: &str) -> String {
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    format!("{module}::{name}")
}
