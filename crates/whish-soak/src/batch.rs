//! The batch soak: a payouts file of N rows sent by child processes (`whish-soak batch-child`,
//! the library's `Batch::run` on one SQLite journal) against the in-process sandbox, with faults
//! on about a fifth of the transfer calls, each child killed with SIGKILL at a random point and
//! the batch run again, until a run ends with every row accepted; the first run has a twin,
//! the same batch started at once in another process. Then the truth checker:
//!
//! - every row paid exactly once (0 duplicates: two transfers of one row; 0 lost: a row with
//!   none; 0 foreign: a transfer of no row);
//! - the last run's results file complete: one line per row, each accepted with the LTN the
//!   sandbox holds;
//! - 0 false reports in every results file of every run, killed ones included: a row reported
//!   accepted that the sandbox does not hold (or under another LTN), or reported refused under
//!   a Request-id the sandbox holds.
//!
//! `cargo xtask soak --batch 10000 --kills 10 --release`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use whish::core::{ClientSettings, SecretString};
use whish::journal::Journal;
use whish::payouts::{Batch, Defaults, ResultFormat, ResultWriter, RowOutcome, RunOptions};
use whish::transfer::{CountryId, Customer, FirstName, LastName, TransferClient};
use whish_sandbox::{Endpoint, Fault, Sandbox};

const NAME: &str = "soak-batch";

/// The parent's settings.
pub struct BatchArgs {
    pub rows: usize,
    pub kills: usize,
    pub seed: u64,
    pub concurrency: usize,
}

fn defaults() -> Defaults {
    Defaults::new()
        .from_country(CountryId::LEBANON)
        .sender(Customer::new(
            FirstName::new("Relief"),
            LastName::new("Org"),
            "+9611000000",
        ))
}

fn write_file(path: &Path, rows: usize) -> Result<(), String> {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(|e| e.to_string())?);
    let w = |f: &mut std::io::BufWriter<std::fs::File>, s: String| {
        f.write_all(s.as_bytes()).map_err(|e| e.to_string())
    };
    w(&mut f, "reference,receiver_first_name,receiver_last_name,receiver_phone,receiver_date_of_birth,amount,currency,reason,source_of_funds\n".into())?;
    for i in 0..rows {
        w(
            &mut f,
            format!(
                "S{i:06},Karim,Nassar,+9617{i:07},09-09-1989,{}.{:02},USD,Family Support,Savings\n",
                10 + i % 90,
                i % 100
            ),
        )?;
    }
    f.flush().map_err(|e| e.to_string())
}

/// The child: run the batch once, write its results, print its peak memory.
pub async fn child(argv: &[String]) -> Result<(), String> {
    let arg = |name: &str| {
        argv.iter()
            .position(|a| a == name)
            .and_then(|i| argv.get(i + 1))
            .cloned()
            .ok_or_else(|| format!("{name} is missing"))
    };
    let (file, journal, results) = (arg("--file")?, arg("--journal")?, arg("--results")?);
    let concurrency: usize = arg("--concurrency")?.parse().map_err(|e| format!("{e}"))?;
    let var = |name: &str| std::env::var(name).map_err(|_| format!("{name} is not set"));
    let client = TransferClient::builder(
        ClientSettings::new(var("WHISH_TRANSFER_BASE_URL")?).policy(crate::run::policy()),
    )
    .username(var("WHISH_TRANSFER_USERNAME")?)
    .key(SecretString::from(var("WHISH_TRANSFER_KEY")?))
    .build()
    .map_err(|e| e.to_string())?;
    let journal = Journal::builder(&journal)
        .lease(Duration::from_secs(3))
        .open()
        .await
        .map_err(|e| e.to_string())?;
    let batch = Batch::new(NAME, &file, defaults()).map_err(|e| e.to_string())?;
    let out = std::fs::File::create(&results).map_err(|e| e.to_string())?;
    let mut writer = ResultWriter::new(out, ResultFormat::Csv).map_err(|e| e.to_string())?;
    let summary = batch
        .run(
            &journal,
            &client,
            &RunOptions::new().concurrency(concurrency),
            &mut |r| writer.write(r),
        )
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "accepted={} open={} peak_kib={}",
        summary.count(RowOutcome::Accepted),
        summary.rows - summary.count(RowOutcome::Accepted),
        peak_kib().unwrap_or(0)
    );
    Ok(())
}

/// This process's peak resident memory (Linux `VmHWM`), in KiB.
fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// One line of a results file: (line, request id, outcome, ltn).
fn read_results(path: &Path) -> Vec<(u64, Option<i64>, String, Option<String>)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .skip(1)
        // A line cut by the kill has fewer fields than the header: it never counts.
        .filter(|l| l.split(',').count() >= 13)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].parse().unwrap_or(0),
                f[2].parse().ok(),
                f[3].to_owned(),
                Some(f[8].to_owned()).filter(|s| !s.is_empty()),
            )
        })
        .collect()
}

/// The parent: the payouts file, faults, the batch run (and killed) until it accepts every row,
/// then the truth checker.
pub async fn parent(sb: Arc<Sandbox>, a: BatchArgs) -> Result<bool, String> {
    let dir = std::env::temp_dir().join(format!("whish-batch-soak-{}", fastrand::u64(..)));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let file = dir.join("payouts.csv");
    write_file(&file, a.rows)?;
    let journal = format!("sqlite:{}", dir.join("journal.sqlite").display());
    println!(
        "whish batch soak: {} rows, {} in flight, {} kills, seed {}, faults on about a fifth of the transfer calls",
        a.rows, a.concurrency, a.kills, a.seed
    );
    let env = sb.env_vars();
    let stop = Arc::new(AtomicBool::new(false));
    let injector = tokio::spawn(inject_faults(sb.clone(), stop.clone(), a.seed));

    let child = BatchChild {
        exe: std::env::current_exe().map_err(|e| e.to_string())?,
        file,
        journal,
        concurrency: a.concurrency,
        env,
    };
    let started = Instant::now();
    let runs = run_until_accepted(&a, &child, &dir, &stop).await?;
    stop.store(true, Ordering::Relaxed);
    let injected = injector.await.map_err(|e| e.to_string())?;
    let elapsed = started.elapsed();

    let f = Findings::check(&sb, a.rows, &runs.results);
    println!(
        "{} runs and a twin of the first ({} killed with SIGKILL), {injected} faults injected, {:.1} s ({:.0} rows/s over all runs)",
        runs.results.len() - 1,
        runs.kills,
        elapsed.as_secs_f64(),
        a.rows as f64 / elapsed.as_secs_f64()
    );
    println!("last run: {}", runs.last_line);
    println!(
        "rows {}  paid {}  duplicates {}  lost {}  foreign {}  results complete {}  reports checked {}  false reports {}",
        a.rows, f.paid, f.duplicates, f.lost, f.foreign, f.complete, f.reports, f.false_reports
    );
    let ok = runs.done && f.passed();
    if ok {
        println!("every row paid exactly once, the results file complete, 0 false reports");
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        println!("FAILED (files kept in {})", dir.display());
    }
    Ok(ok)
}

/// Faults on about a fifth of the calls: one queued whenever fewer than a fifth of the calls
/// so far met one, until `stop`; how many were injected.
async fn inject_faults(sb: Arc<Sandbox>, stop: Arc<AtomicBool>, seed: u64) -> u64 {
    let mut rng = fastrand::Rng::with_seed(seed ^ 0xba7c);
    let mut injected = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let calls = sb.requests().last().map_or(0, |r| r.seq);
        let endpoint = if rng.u32(0..4) == 0 {
            Endpoint::TransferStatus
        } else {
            Endpoint::TransferSend
        };
        if injected * 5 < calls && sb.queued_faults(endpoint) == 0 {
            let fault = match rng.u32(0..4) {
                0 => Fault::DropRequest,
                1 => Fault::DropReply,
                2 => Fault::Delay(crate::plan::DELAY),
                _ => Fault::Pending,
            };
            sb.inject(endpoint, fault, 1);
            injected += 1;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    injected
}

/// How to start one run of the batch: `whish-soak batch-child` on the file and the journal.
struct BatchChild {
    exe: PathBuf,
    file: PathBuf,
    journal: String,
    concurrency: usize,
    env: Vec<(String, String)>,
}

impl BatchChild {
    /// Start a run that writes its results to `results`, its stdout piped.
    fn start(&self, results: &Path) -> Result<tokio::process::Child, String> {
        tokio::process::Command::new(&self.exe)
            .args([
                "batch-child",
                "--file",
                &self.file.display().to_string(),
                "--journal",
                &self.journal,
                "--results",
                &results.display().to_string(),
                "--concurrency",
                &self.concurrency.to_string(),
            ])
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start a child: {e}"))
    }
}

/// What the runs of the batch left: each run's results file, the kills, the last run's line,
/// and whether a run accepted every row.
struct Runs {
    results: Vec<PathBuf>,
    kills: usize,
    last_line: String,
    done: bool,
}

/// Run the batch again and again, the first `a.kills` runs killed partway, until a run accepts
/// every row or the runs are used up; the faults stop for the last runs.
async fn run_until_accepted(
    a: &BatchArgs,
    child: &BatchChild,
    dir: &Path,
    stop: &AtomicBool,
) -> Result<Runs, String> {
    let mut rng = fastrand::Rng::with_seed(a.seed);
    let mut runs = Runs {
        results: Vec::new(),
        kills: 0,
        last_line: String::new(),
        done: false,
    };
    for run in 0..(a.kills + 12) {
        let results = dir.join(format!("results-{run}.csv"));
        runs.results.push(results.clone());
        let mut proc = child.start(&results)?;
        // The first run has a twin: the same batch started at once in another process (an
        // operator running it twice), never killed, its results checked as every run's. Both
        // checks find every row unrecorded; each run must find the other's rows as they are.
        let twin = if run == 0 {
            let twin_results = dir.join("results-0-twin.csv");
            runs.results.push(twin_results.clone());
            Some(child.start(&twin_results)?)
        } else {
            None
        };
        let twin_done = async |twin: Option<tokio::process::Child>| -> Result<(), String> {
            if let Some(twin) = twin {
                let out = twin.wait_with_output().await.map_err(|e| e.to_string())?;
                if !out.status.success() {
                    return Err(format!("the twin batch child failed: {}", out.status));
                }
            }
            Ok(())
        };
        if runs.kills < a.kills {
            // Killed at a random point: after a random share of the rows of this run.
            let target = rng.usize(1..=(a.rows / (a.kills + 1)).max(2));
            if kill_after(&mut proc, &results, target, &mut rng).await? {
                runs.kills += 1;
                twin_done(twin).await?;
                continue;
            }
        }
        let out = proc.wait_with_output().await.map_err(|e| e.to_string())?;
        twin_done(twin).await?;
        runs.last_line = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if !out.status.success() {
            return Err(format!("a batch child failed: {}", out.status));
        }
        if runs.last_line.contains(&format!("accepted={} ", a.rows)) {
            runs.done = true;
            break;
        }
        // Rows still open (Pending, unknown): stop the faults for the last runs, as an operator
        // runs the batch again later.
        if run >= a.kills + 3 {
            stop.store(true, Ordering::Relaxed);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(runs)
}

/// Wait until the run has written more than `target` lines of results (or ended, or 600 s
/// passed), then kill it with SIGKILL if it still runs; true when it was killed.
async fn kill_after(
    proc: &mut tokio::process::Child,
    results: &Path,
    target: usize,
    rng: &mut fastrand::Rng,
) -> Result<bool, String> {
    let at = Instant::now();
    loop {
        let written = std::fs::read_to_string(results)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if written > target || at.elapsed() > Duration::from_secs(600) {
            break;
        }
        if let Ok(Some(_)) = proc.try_wait() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(rng.u64(1..10))).await;
    }
    if proc.try_wait().map_err(|e| e.to_string())?.is_none() {
        proc.kill().await.map_err(|e| format!("kill: {e}"))?; // SIGKILL
        return Ok(true);
    }
    Ok(false)
}

/// The truth checker's findings: the sandbox's transfers against the rows, and every results
/// file of every run against the sandbox.
struct Findings {
    paid: usize,
    duplicates: usize,
    lost: usize,
    foreign: usize,
    reports: usize,
    false_reports: usize,
    complete: bool,
}

impl Findings {
    /// Check the sandbox and the results files `runs` (the last one the final run) for a batch
    /// of `rows` rows; each false report is printed to stderr as it is found.
    fn check(sb: &Sandbox, rows: usize, runs: &[PathBuf]) -> Findings {
        let transfers = sb.transfers();
        let by_id: HashMap<i64, &whish_sandbox::TransferRecord> =
            transfers.iter().map(|t| (t.request_id, t)).collect();
        let row_of = rows_by_request_id(rows);
        let mut per_row: BTreeMap<usize, usize> = BTreeMap::new();
        let mut foreign = 0;
        for t in &transfers {
            match row_of.get(&t.request_id) {
                Some(row) => *per_row.entry(*row).or_default() += 1,
                None => foreign += 1,
            }
        }
        let duplicates = per_row.values().filter(|n| **n > 1).count();
        let lost = rows - per_row.len();
        let (reports, false_reports) = false_reports(runs, &by_id);
        let last = runs.last().map(|p| read_results(p)).unwrap_or_default();
        let complete = last.len() == rows && last.iter().all(|(_, _, o, _)| o == "accepted");
        Findings {
            paid: per_row.len(),
            duplicates,
            lost,
            foreign,
            reports,
            false_reports,
            complete,
        }
    }

    /// Every row paid exactly once, nothing else paid, the last results file complete, and no
    /// false report.
    fn passed(&self) -> bool {
        self.duplicates == 0
            && self.lost == 0
            && self.foreign == 0
            && self.complete
            && self.false_reports == 0
    }
}

/// The row of each Request-id the batch may send (a row's first four attempts).
fn rows_by_request_id(rows: usize) -> HashMap<i64, usize> {
    let mut row_of: HashMap<i64, usize> = HashMap::new();
    for i in 0..rows {
        for attempt in 0..4 {
            let id = whish::payouts::key::request_id(NAME, &format!("ref:S{i:06}"), attempt);
            row_of.insert(id.get(), i);
        }
    }
    row_of
}

/// The reports in every results file, and how many of them are false: accepted but not held
/// under that LTN, or refused under a Request-id the sandbox holds. Each false one goes to stderr.
fn false_reports(
    runs: &[PathBuf],
    by_id: &HashMap<i64, &whish_sandbox::TransferRecord>,
) -> (usize, usize) {
    let mut false_reports = 0;
    let mut reports = 0;
    for path in runs {
        for (line, id, outcome, ltn) in read_results(path) {
            reports += 1;
            let held = id.and_then(|id| by_id.get(&id));
            let falsehood = match outcome.as_str() {
                "accepted" => held.is_none_or(|t| Some(&t.ltn_number) != ltn.as_ref()),
                "refused" => held.is_some(),
                _ => false,
            };
            if falsehood {
                false_reports += 1;
                eprintln!(
                    "false report: {} line {line}: {outcome} {id:?}",
                    path.display()
                );
            }
        }
    }
    (reports, false_reports)
}
