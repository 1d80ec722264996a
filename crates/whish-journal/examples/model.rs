//! The journal's model checker, as `cargo xtask model` runs it.
//!
//! ```text
//! model [--large] [--lie NAME] [--list-lies]
//! ```
//!
//! Exit 0 when the check completes with no violation; 1 when it finds one (its trace is
//! printed) or the state limit cut it short; 2 on bad arguments.

use std::process::ExitCode;

use whish_core::lies::Lie;
use whish_journal::model::{Bounds, check};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list-lies") {
        for lie in Lie::ALL {
            println!("{}", lie.name());
        }
        return ExitCode::SUCCESS;
    }
    let bounds = if args.iter().any(|a| a == "--large") {
        Bounds::LARGE
    } else {
        Bounds::CI
    };
    let lie = match args.iter().position(|a| a == "--lie") {
        None => None,
        Some(i) => match args.get(i + 1).and_then(|n| Lie::parse(n)) {
            Some(lie) => Some(lie),
            None => {
                eprintln!("--lie takes one of: {}", names());
                return ExitCode::from(2);
            }
        },
    };
    let report = check(bounds, lie);
    print!("{report}");
    if report.violation().is_some() || report.cut() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn names() -> String {
    Lie::ALL.map(|l| l.name()).join(", ")
}
