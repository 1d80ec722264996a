//! `whish-soak --ops N --seed S [--workers W]`: random operations of all three services through
//! the SDK clients against an in-process sandbox, with faults (dropped request, dropped reply,
//! delay past the timeout, Pending) on about a fifth of the client calls. Afterwards it compares
//! what the caller believes with the sandbox's state and prints a table: intended, created,
//! duplicates, lost, unresolved. Exit 1 when anything is duplicated or lost.
//!
//! Run it as `cargo xtask soak --ops 10000 --seed 1`.
//!
//! `--crash K [--journal URL] [--workers W]` runs the crash soak instead (see [`crash`]): the
//! client as W child processes on one journal, killed with SIGKILL K times in all.
//!
//! `--batch N --kills K [--workers W]` runs the batch soak (see [`batch`]): a payouts file of N
//! rows, W in flight, its child process killed with SIGKILL K times and run again.
//!
//! `--callbacks N [--journal postgres://...] [--outage SECS]` runs the receiver soak (see
//! [`callbacks`]): N changes whose callbacks reach receiver processes under faults.
//!
//! `--slowloris N` measures the receiver under a flood (see [`flood`]).

mod batch;
mod callbacks;
mod crash;
mod flood;
mod plan;
mod proxy;
mod receive;
mod reconcile;
mod run;
mod truth;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use whish::Decimal;
use whish_sandbox::{Fault, Sandbox};

struct Args {
    ops: usize,
    seed: u64,
    workers: usize,
    crash: Option<usize>,
    journal: Option<String>,
    batch: Option<usize>,
    kills: usize,
    callbacks: Option<usize>,
    outage: u64,
    slowloris: Option<usize>,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        ops: 300,
        seed: 1,
        workers: 16,
        crash: None,
        journal: None,
        batch: None,
        kills: 0,
        callbacks: None,
        outage: 60,
        slowloris: None,
    };
    let mut workers_given = false;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{flag} needs a value"))
                .and_then(|v| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}")))
        };
        match flag.as_str() {
            "--ops" => a.ops = value()? as usize,
            "--seed" => a.seed = value()?,
            "--workers" => {
                a.workers = value()? as usize;
                workers_given = true;
            }
            "--crash" => a.crash = Some(value()? as usize),
            "--batch" => a.batch = Some(value()? as usize),
            "--kills" => a.kills = value()? as usize,
            "--callbacks" => a.callbacks = Some(value()? as usize),
            "--outage" => a.outage = value()?,
            "--slowloris" => a.slowloris = Some(value()? as usize),
            "--journal" => {
                a.journal = Some(it.next().ok_or("--journal needs a URL")?);
            }
            other => {
                return Err(format!(
                    "unknown argument {other}; use --ops N --seed S [--workers W] [--crash K [--journal URL]] | --batch N --kills K [--workers W] | --callbacks N [--journal URL] [--outage SECS] | --slowloris N"
                ));
            }
        }
    }
    if a.crash.is_some() && !workers_given {
        a.workers = 1; // one client process unless asked for a fleet
    }
    if a.crash.is_some() && a.workers > 1 && a.journal.is_none() {
        return Err(
            "several client processes need a shared PostgreSQL journal: --journal postgres://..."
                .into(),
        );
    }
    Ok(a)
}

async fn sandbox() -> std::io::Result<Sandbox> {
    let plenty = Decimal::from(1_000_000_000u64);
    Sandbox::builder()
        .lenient(true)
        .transfer_balance("USD", plenty)
        .limits("USD", plenty, plenty)
        .collect_balance("USD", plenty)
        .topup_balance(plenty, Decimal::ZERO)
        .link_expiry(Duration::from_secs(30 * 24 * 3600))
        .start()
        .await
}

fn fault_summary(plan: &[plan::Op]) -> String {
    use plan::Trouble;
    let n = |f: fn(&Trouble) -> bool| {
        plan.iter()
            .filter(|o| o.fault.as_ref().is_some_and(f))
            .count()
    };
    let calls = plan.iter().filter(|o| o.kind.endpoint().is_some()).count();
    format!(
        "{} faults on {calls} client operations: {} dropped requests, {} dropped replies, {} delays of {} ms, {} Pending, {} proxy pages after a timeout (403, 429, 502), {} pages after the request was applied (403; 502 on a collect create), {} unreadable confirmations, {} dropped futures",
        plan.iter().filter(|o| o.fault.is_some()).count(),
        n(|f| matches!(f, Trouble::Fault(Fault::DropRequest))),
        n(|f| matches!(f, Trouble::Fault(Fault::DropReply))),
        n(|f| matches!(f, Trouble::Fault(Fault::Delay(_)))),
        plan::DELAY.as_millis(),
        n(|f| matches!(f, Trouble::Fault(Fault::Pending))),
        n(|f| matches!(f, Trouble::PageAfterTimeout(_))),
        n(|f| matches!(f, Trouble::Fault(Fault::AppliedPage(_)))),
        n(|f| matches!(f, Trouble::UnreadConfirmation)),
        n(|f| matches!(f, Trouble::DroppedFuture)),
    )
}

/// Run the child process `argv` names, if it names one; its exit code.
async fn run_child(argv: &[String]) -> Option<ExitCode> {
    let (role, run) = match argv.first().map(String::as_str) {
        Some("batch-child") => ("batch child", batch::child(&argv[1..]).await),
        Some("callbacks-child") => ("callbacks child", callbacks::child(&argv[1..]).await),
        Some("flood-child") => ("flood child", flood::child(&argv[1..]).await),
        Some("crash-child") => {
            let run = match crash::ChildArgs::parse(&argv[1..]) {
                Ok(c) => crash::child(c).await,
                Err(e) => Err(e),
            };
            ("child", run)
        }
        _ => return None,
    };
    Some(match run {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("whish-soak {role}: {e}");
            ExitCode::FAILURE
        }
    })
}

/// A soak's verdict as the exit code: success only when it passed.
fn verdict(run: Result<bool, String>) -> ExitCode {
    match run {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("whish-soak: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Run the soak on the sandbox that `a` selects instead of the operations soak (the receiver,
/// batch or crash soak, first one given wins); None when it selects none.
async fn run_other_soak(sb: &Arc<Sandbox>, a: &Args) -> Option<ExitCode> {
    if let Some(changes) = a.callbacks {
        let args = callbacks::CallbackArgs {
            changes,
            seed: a.seed,
            journal: a.journal.clone(),
            outage: Duration::from_secs(a.outage),
        };
        return Some(verdict(callbacks::parent(sb.clone(), args).await));
    }
    if let Some(rows) = a.batch {
        let args = batch::BatchArgs {
            rows,
            kills: a.kills,
            seed: a.seed,
            concurrency: a.workers,
        };
        return Some(verdict(batch::parent(sb.clone(), args).await));
    }
    if let Some(kills) = a.crash {
        let crash = crash::CrashArgs {
            kills,
            ops: a.ops,
            seed: a.seed,
            journal: a.journal.clone(),
            workers: a.workers,
        };
        return Some(verdict(crash::parent(sb.clone(), crash).await));
    }
    None
}

#[tokio::main]
async fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = run_child(&argv).await {
        return code;
    }
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("whish-soak: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(n) = a.slowloris {
        return verdict(flood::parent(n).await);
    }
    let sb = match sandbox().await {
        Ok(sb) => Arc::new(sb),
        Err(e) => {
            eprintln!("whish-soak: cannot start the sandbox: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(code) = run_other_soak(&sb, &a).await {
        return code;
    }
    operations_soak(sb, &a).await
}

/// The operations soak: the plan run through the clients under faults, then the table, the
/// truth checker and the callbacks' check; exit 2 when it cannot start.
async fn operations_soak(sb: Arc<Sandbox>, a: &Args) -> ExitCode {
    let plan = Arc::new(plan::plan(a.ops, a.seed));
    println!(
        "whish soak: {} operations, seed {}, {} in flight; {}",
        a.ops,
        a.seed,
        a.workers,
        fault_summary(&plan)
    );
    let started = Instant::now();
    // The callback receiver needs a collect client of its own to read statuses with.
    let reader = match run::Clients::new(&sb, String::new()) {
        Ok(c) => c.collect,
        Err(e) => {
            eprintln!("whish-soak: {e}");
            return ExitCode::from(2);
        }
    };
    let (callbacks, handed, receiver) = match receive::start(&sb, reader).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("whish-soak: {e}");
            return ExitCode::from(2);
        }
    };
    let ledger = match run::run(sb.clone(), plan, a.workers, callbacks).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("whish-soak: {e}");
            return ExitCode::FAILURE;
        }
    };
    let elapsed = started.elapsed();
    let rows = reconcile::reconcile(&sb, &ledger);
    print_ledger(&rows, &ledger, elapsed);
    let t = reconcile::total(&rows);
    let reports = ledger
        .reports
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let truth = truth::check(&sb, &reports);
    println!("\nthe truth checker: every answer against the sandbox\n{truth}");
    let callbacks = receive::check(&sb, &handed, &receiver).await;
    match &callbacks {
        Ok(line) => println!("{line}"),
        Err(line) => println!("FAILED: {line}"),
    }
    if t.duplicates == 0 && t.lost == 0 && callbacks.is_ok() && truth.falsehoods() == 0 {
        println!(
            "0 false reports, no duplicates, nothing lost ({} unresolved)",
            t.unresolved
        );
        ExitCode::SUCCESS
    } else {
        println!(
            "FAILED: {} false reports, {} duplicates, {} lost",
            truth.falsehoods(),
            t.duplicates,
            t.lost
        );
        ExitCode::FAILURE
    }
}

/// Print the reconciled table, the reads and controls the ledger counted, and the run's time.
fn print_ledger(rows: &[reconcile::Row], ledger: &run::Ledger, elapsed: Duration) {
    println!("\n{}", reconcile::Table(rows));
    println!(
        "reads: {} status answered, {} not; sandbox control: {} run, {} without a target; {} client operations without a target",
        ledger.reads.0.load(Ordering::Relaxed),
        ledger.reads.1.load(Ordering::Relaxed),
        ledger.controls.0.load(Ordering::Relaxed),
        ledger.controls.1.load(Ordering::Relaxed),
        ledger.skipped.load(Ordering::Relaxed),
    );
    println!("{:.1} s", elapsed.as_secs_f64());
}
