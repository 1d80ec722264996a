//! `cargo xtask model`: the journal's model checker (`whish_journal::model`, built with the
//! features `model` and `lies`, which no shipped build has).
//!
//! - `cargo xtask model`: the bound CI runs; exit 1 on a violation or a search cut short.
//! - `cargo xtask model --large`: the larger bound docs/journal.md reports.
//! - `cargo xtask model --lie NAME`: with one fixed lie brought back; exit 1 with its trace
//!   when the checker finds it (it must).
//! - `cargo xtask model --list-lies`: the lies, one a line.
//! - `cargo xtask model --every-lie`: each lie in turn; fails when the checker misses one
//!   (CI runs it, so a checker that stops seeing fails CI).

use std::path::Path;
use std::process::{Command, Output};

fn checker(root: &Path, args: &[&str]) -> Result<Output, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    Command::new(cargo)
        .current_dir(root)
        .args([
            "run",
            "--quiet",
            "--locked",
            "--package",
            "whish-journal",
            "--features",
            "model",
            "--example",
            "model",
            "--",
        ])
        .args(args)
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))
}

pub(crate) fn run(root: &Path, args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "--every-lie") {
        return every_lie(root);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = checker(root, &args)?;
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(())
    } else if args.contains(&"--lie") {
        Err("the checker found the lie (as it must): see the trace above".into())
    } else {
        Err("the model checker found a violation, or could not finish: see above".into())
    }
}

fn every_lie(root: &Path) -> Result<(), String> {
    let list = checker(root, &["--list-lies"])?;
    if !list.status.success() {
        return Err(format!(
            "the checker did not build or run:\n{}",
            String::from_utf8_lossy(&list.stderr)
        ));
    }
    let names = String::from_utf8_lossy(&list.stdout).to_string();
    let mut missed = Vec::new();
    for name in names.lines().filter(|l| !l.is_empty()) {
        let out = checker(root, &["--lie", name])?;
        let report = String::from_utf8_lossy(&out.stdout);
        let found = !out.status.success() && report.contains("1 violation");
        println!("== {name}: {}", if found { "found" } else { "MISSED" });
        print!("{report}");
        if !found {
            missed.push(name.to_owned());
        }
    }
    if missed.is_empty() {
        Ok(())
    } else {
        Err(format!("the checker missed: {}", missed.join(", ")))
    }
}
