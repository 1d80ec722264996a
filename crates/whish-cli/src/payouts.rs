//! `whish payouts ...`: a batch file sent as one resumable, journaled batch; its follow-up and
//! the cancel of what was not collected.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::printed;
use whish::payouts::{
    Batch, BatchError, COLUMNS, Collection, Defaults, FollowUpRow, ResultFormat, ResultWriter,
    RowOutcome, RunOptions, RunSummary, StopSignal,
};
use whish::transfer::{CountryId, Customer, DateOfBirth, FirstName, Identity, LastName};

use crate::cli::{BatchArgs, PayoutsCmd};
use crate::output::{self, Done, NOT_SENT, OK, PENDING, REFUSED, STOPPED, usage};
use crate::settings::Ctx;

pub async fn run(ctx: &Ctx, cmd: PayoutsCmd) -> Done {
    match cmd {
        PayoutsCmd::Columns => {
            let columns: Vec<_> = COLUMNS
                .iter()
                .map(|c| printed::BatchColumn {
                    column: c.name,
                    required: c.required,
                    about: c.about,
                })
                .collect();
            Ok(ctx.out.success(&columns))
        }
        PayoutsCmd::Check { mut batch } => {
            let b = batch_of(&mut batch)?;
            let client = ctx.transfer()?;
            let journal = ctx.journal().await?;
            let report = b
                .check(&journal, &client)
                .await
                .map_err(|e| usage(e.to_string()))?;
            let bad = !report.errors.is_empty();
            ctx.out.print(&printed::BatchChecked {
                batch: b.name(),
                rows: report.rows,
                bad_rows: &report.errors,
            });
            if bad {
                eprintln!(
                    "whish: {} problem(s) in {} rows; nothing was sent",
                    report.errors.len(),
                    report.rows
                );
                Ok(NOT_SENT)
            } else {
                Ok(OK)
            }
        }
        PayoutsCmd::Send {
            mut batch,
            results,
            concurrency,
            rate,
            skip_bad_rows,
            no_stop_on_account_refusal,
        } => {
            let b = batch_of(&mut batch)?;
            let client = ctx.transfer()?;
            let journal = ctx.journal().await?;
            let path = results_at(&batch.file, results, "results.csv")?;
            let stop = StopSignal::new();
            ctrl_c(stop.clone());
            let mut options = RunOptions::new()
                .concurrency(concurrency)
                .skip_bad_rows(skip_bad_rows)
                .stop_on_account_refusal(!no_stop_on_account_refusal)
                .stop_signal(stop);
            if let Some(r) = rate {
                options = options.rate(r);
            }
            eprintln!(
                "whish: batch `{}`: every row is recorded in the journal before it is sent; results go to {}",
                b.name(),
                path.display()
            );
            let check = b
                .check(&journal, &client)
                .await
                .map_err(|e| usage(e.to_string()))?;
            if !check.errors.is_empty() && !skip_bad_rows {
                ctx.out.print(&printed::BatchChecked {
                    batch: b.name(),
                    rows: check.rows,
                    bad_rows: &check.errors,
                });
                return Err(usage(format!(
                    "{} problem(s) in {} rows (fix them, or --skip-bad-rows)",
                    check.errors.len(),
                    check.rows
                )));
            }
            // Only now, with the file checked: a run refused for bad rows leaves the earlier
            // run's results (and their LTNs) as they were, and stores no defaults.
            crate::batch_defaults::store(&batch)?;
            let mut writer = results_writer(&path)?;
            let mut progress = Progress::new(check.rows);
            let summary = b
                .run_checked(&journal, &client, check, &options, &mut |r| {
                    progress.row(r.outcome);
                    writer.write(r)
                })
                .await;
            progress.done();
            match summary {
                Ok(summary) => Ok(report_run(ctx, &b, &summary, &path)),
                Err(e) => Err(failed_run(e, "rows sent before it")),
            }
        }
        PayoutsCmd::FollowUp { mut batch, results } => {
            let path = results_at(&batch.file, results, "follow-up.csv")?;
            follow(ctx, &mut batch, &path, None).await
        }
        PayoutsCmd::Cancel {
            mut batch,
            uncollected_before,
            reason,
            results,
        } => {
            let format =
                time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
            let before = time::PrimitiveDateTime::parse(uncollected_before.trim(), &format)
                .map_err(|e| usage(format!("--uncollected-before: {e} (yyyy-MM-dd HH:mm:ss)")))?
                .assume_utc();
            let path = results_at(&batch.file, results, "cancel.csv")?;
            follow(ctx, &mut batch, &path, Some((before, reason))).await
        }
    }
}

/// Ctrl-C stops the batch cleanly (the rows in flight finish and are recorded); a second one
/// ends the process at once (the journal holds every row sent: run the batch again).
fn ctrl_c(stop: StopSignal) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        eprintln!(
            "\nwhish: stopping: the rows in flight finish and are recorded; Ctrl-C again to quit now"
        );
        stop.stop("stopped by Ctrl-C: run the batch again to send the rest");
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("whish: quit; the journal holds every row sent: run the batch again");
            std::process::exit(i32::from(STOPPED));
        }
    });
}

/// The batch the flags name, with the defaults not given taken from those stored for it.
fn batch_of(a: &mut BatchArgs) -> Result<Batch, u8> {
    if crate::batch_defaults::fill(a)? {
        eprintln!(
            "whish: batch `{}`: the defaults not given are the ones stored in {}",
            a.batch,
            crate::batch_defaults::path_of(&a.file).display()
        );
    }
    let mut defaults = Defaults::new();
    if let Some(c) = a.from_country {
        defaults = defaults
            .from_country(CountryId::new(c).map_err(|e| usage(format!("--from-country: {e}")))?);
    }
    if let (Some(first), Some(last), Some(phone)) =
        (&a.sender_first_name, &a.sender_last_name, &a.sender_phone)
    {
        let mut sender = Customer::new(FirstName::new(first), LastName::new(last), phone);
        if let Some(d) = &a.sender_date_of_birth {
            sender = sender.identity(Identity::new(
                DateOfBirth::parse(d).map_err(|e| usage(format!("--sender-date-of-birth: {e}")))?,
            ));
        }
        defaults = defaults.sender(sender);
    }
    if let Some(u) = &a.callback_url {
        defaults = defaults.callback_url(u.clone());
    }
    Batch::new(a.batch.clone(), &a.file, defaults)
        .map(|b| {
            b.key_rows_by_line(a.key_by_line)
                .allow_repeats(a.allow_repeat)
        })
        .map_err(|e| usage(e.to_string()))
}

/// `payroll.csv` -> `payroll.results.csv`, beside it.
pub fn beside(file: &Path, suffix: &str) -> PathBuf {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "batch".into());
    file.with_file_name(format!("{stem}.{suffix}"))
}

/// Where the results go: `results`, else beside the batch file with `suffix`. Never the batch
/// file itself: writing the results truncates their file, and the batch's rows would be lost
/// (the run sends the rows its check read, so it would go on).
fn results_at(file: &Path, results: Option<PathBuf>, suffix: &str) -> Result<PathBuf, u8> {
    let path = results.unwrap_or_else(|| beside(file, suffix));
    let same = std::fs::canonicalize(&path)
        .ok()
        .is_some_and(|p| std::fs::canonicalize(file).is_ok_and(|f| f == p));
    if same {
        return Err(usage(format!(
            "--results {} is the batch file: name another file for the results",
            path.display()
        )));
    }
    Ok(path)
}

fn results_writer(path: &Path) -> Result<ResultWriter<std::fs::File>, u8> {
    let file = std::fs::File::create(path)
        .map_err(|e| usage(format!("cannot write {}: {e}", path.display())))?;
    ResultWriter::new(file, format_of(path)).map_err(|e| usage(format!("{}: {e}", path.display())))
}

fn format_of(path: &Path) -> ResultFormat {
    match path.extension().and_then(|e| e.to_str()) {
        Some("jsonl" | "ndjson" | "json") => ResultFormat::JsonLines,
        _ => ResultFormat::Csv,
    }
}

fn report_run(ctx: &Ctx, b: &Batch, s: &RunSummary, path: &Path) -> u8 {
    ctx.out.print(&printed::RunReport {
        batch: b.name(),
        rows: s.rows,
        outcomes: RowOutcome::ALL
            .iter()
            .map(|o| (o.as_str(), s.count(*o)))
            .collect(),
        totals: s
            .totals
            .iter()
            .map(|(c, t)| {
                let total = printed::RunTotal {
                    accepted: t.accepted,
                    amount: output::money(c, t.amount),
                    fees: output::money(c, t.fees),
                };
                (c.as_str(), total)
            })
            .collect(),
        stopped: s.stopped.as_deref(),
        recovered: s.recovered,
        held_elsewhere: s.held_elsewhere,
        results: path.display().to_string(),
    });
    if s.held_elsewhere > 0 {
        eprintln!(
            "whish: {} journal entries are held by another live process (another run of this batch?): their rows are reported unknown",
            s.held_elsewhere
        );
    }
    let open = s.count(RowOutcome::Pending) + s.count(RowOutcome::Unknown);
    let (not_sent, for_a_person) = (
        s.count(RowOutcome::NotSent),
        s.count(RowOutcome::NeedsOperator),
    );
    if let Some(why) = &s.stopped {
        eprintln!("whish: {}", output::printable(why));
        STOPPED
    } else if open + not_sent + for_a_person > 0 {
        if open > 0 {
            eprintln!(
                "whish: {open} row(s) pending or unknown: run the same command again later (the same Request-ids are read again, never new transfers)"
            );
        }
        if not_sent > 0 {
            eprintln!(
                "whish: {not_sent} row(s) not sent: see `message` in {} (a bad row skipped, or a row changed since it was recorded, is not sent by running again)",
                path.display()
            );
        }
        if for_a_person > 0 {
            eprintln!(
                "whish: {for_a_person} row(s) wait for a person (open past the recovery deadline): `whish journal recover --retry-needs-operator --deadline-hours H` (H covering when they were recorded) settles them (each read by status first, sent again only if the service never received it; every entry of the journal waiting within H, or only the keys named before the options), then run the batch again; `whish journal abandon KEY --reason TEXT` closes one that is not to be paid"
            );
        }
        PENDING
    } else if s.count(RowOutcome::Refused) > 0 {
        eprintln!(
            "whish: {} row(s) refused: see `code` and `message` in {}",
            s.count(RowOutcome::Refused),
            path.display()
        );
        REFUSED
    } else {
        OK
    }
}

async fn follow(
    ctx: &Ctx,
    a: &mut BatchArgs,
    path: &Path,
    cancel: Option<(time::OffsetDateTime, String)>,
) -> Done {
    let b = batch_of(a)?;
    let client = ctx.transfer()?;
    let journal = ctx.journal().await?;
    let file = std::fs::File::create(path)
        .map_err(|e| usage(format!("cannot write {}: {e}", path.display())))?;
    let mut writer = FollowWriter::new(file, format_of(path))
        .map_err(|e| usage(format!("{}: {e}", path.display())))?;
    let mut counts: std::collections::BTreeMap<&'static str, u64> = Default::default();
    let mut cancelled_now = 0u64;
    let mut cancels = Cancels::default();
    let mut sink = |r: &FollowUpRow| {
        *counts.entry(r.collection.as_str()).or_default() += 1;
        if r.cancelled_now {
            cancelled_now += 1;
        }
        if let Some(o) = r.cancel {
            *cancels.by_outcome.entry(o).or_default() += 1;
            // A refusal matters while the money still waits (a row collected meanwhile is
            // refused by the service, and is where it should be).
            if o == RowOutcome::Refused && r.collection == Collection::Waiting {
                cancels.refused_waiting += 1;
            }
        }
        writer.write(r)
    };
    let done = match &cancel {
        None => b.follow_up(&journal, &client, 8, &mut sink).await,
        Some((before, reason)) => {
            b.cancel_uncollected(&journal, &client, *before, reason, 8, &mut sink)
                .await
        }
    };
    done.map_err(|e| failed_run(e, "cancels sent before it"))?;
    let unknown = counts
        .get(Collection::Unknown.as_str())
        .copied()
        .unwrap_or(0);
    let cancels_open = cancels.count(RowOutcome::Pending)
        + cancels.count(RowOutcome::Unknown)
        + cancels.count(RowOutcome::NotSent);
    ctx.out.print(&printed::FollowedUp {
        batch: b.name(),
        rows: &counts,
        cancelled: cancel.as_ref().map(|_| cancelled_now),
        cancels: cancel.as_ref().map(|_| {
            RowOutcome::ALL
                .iter()
                .filter(|o| cancels.count(**o) > 0)
                .map(|o| (o.as_str(), cancels.count(*o)))
                .collect()
        }),
        results: path.display().to_string(),
    });
    if cancels_open > 0 {
        let again = if cancel.is_some() {
            "; run the same command again (the same cancels are sent, never second ones)"
        } else {
            ""
        };
        eprintln!(
            "whish: {cancels_open} cancel(s) pending, unknown or not sent: see `cancel` and `message` in {}{again}",
            path.display()
        );
        return Ok(PENDING);
    }
    if unknown > 0 {
        return Ok(PENDING);
    }
    // A follow-up's 0 says every row settled: a row whose money still waits for collection has
    // not (a cancel run's rows newer than its cutoff wait by design, and do not count).
    let waiting = counts
        .get(Collection::Waiting.as_str())
        .copied()
        .unwrap_or(0);
    if cancel.is_none() && waiting > 0 {
        eprintln!(
            "whish: {waiting} row(s) still wait for collection: run the follow-up again later"
        );
        return Ok(PENDING);
    }
    if cancels.refused_waiting > 0 {
        eprintln!(
            "whish: {} cancel(s) refused while the transfer still waits for collection: see `message` in {}",
            cancels.refused_waiting,
            path.display()
        );
        return Ok(REFUSED);
    }
    Ok(OK)
}

/// The cancels of a cancel run.
#[derive(Default)]
struct Cancels {
    /// By how each ended.
    by_outcome: std::collections::BTreeMap<RowOutcome, u64>,
    /// The refused ones whose transfer still waits for collection.
    refused_waiting: u64,
}

impl Cancels {
    fn count(&self, o: RowOutcome) -> u64 {
        self.by_outcome.get(&o).copied().unwrap_or(0)
    }
}

/// A run that ended with an error: before anything was sent (bad rows, the file, the journal
/// read before the start-up recovery), exit 2; once something may have been sent (the start-up
/// recovery failed part way, or the results could not be written), exit 5: the run stopped,
/// what it sent is in the journal, and the same command run again reports it.
fn failed_run(e: BatchError, sent: &str) -> u8 {
    match e {
        BatchError::Results(e) => {
            eprintln!(
                "whish: the results could not be written ({}): the run stopped; the {sent} are recorded in the journal: make room and run the same command again, which reports them (never sends them twice)",
                output::printable(&e.to_string())
            );
            STOPPED
        }
        BatchError::Recovery(e) => {
            eprintln!(
                "whish: the journal's start-up recovery failed part way ({}): it may have sent again requests an earlier run left open (the same requests, never second ones; what it learnt is in the journal); none of this run's rows was started: run the same command again",
                output::printable(&e.to_string())
            );
            STOPPED
        }
        other => usage(other.to_string()),
    }
}

/// Follow-up rows as CSV or JSON lines, flushed one by one.
enum FollowWriter {
    Csv(Box<csv::Writer<std::fs::File>>),
    JsonLines(std::io::BufWriter<std::fs::File>),
}

impl FollowWriter {
    const HEADER: [&'static str; 12] = [
        "line",
        "reference",
        "request_id",
        "collection",
        "status",
        "ltn_number",
        "transfer_id",
        "sent_at",
        "cancelled_now",
        "cancel",
        "source",
        "message",
    ];

    fn new(file: std::fs::File, format: ResultFormat) -> std::io::Result<FollowWriter> {
        if format != ResultFormat::Csv {
            return Ok(FollowWriter::JsonLines(std::io::BufWriter::new(file)));
        }
        let mut w = csv::Writer::from_writer(file);
        w.write_record(Self::HEADER)?;
        w.flush()?;
        Ok(FollowWriter::Csv(Box::new(w)))
    }

    fn write(&mut self, r: &FollowUpRow) -> std::io::Result<()> {
        match self {
            FollowWriter::JsonLines(file) => {
                serde_json::to_writer(&mut *file, r).map_err(std::io::Error::other)?;
                writeln!(file)?;
                file.flush()
            }
            FollowWriter::Csv(w) => {
                let text = |v: &Option<String>| v.clone().unwrap_or_default();
                w.write_record([
                    r.line.to_string(),
                    text(&r.reference),
                    r.request_id.map(|i| i.to_string()).unwrap_or_default(),
                    r.collection.to_string(),
                    text(&r.status),
                    text(&r.ltn_number),
                    text(&r.transfer_id),
                    r.sent_at.and_then(output::rfc3339).unwrap_or_default(),
                    r.cancelled_now.to_string(),
                    r.cancel
                        .map(RowOutcome::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    r.source.to_string(),
                    text(&r.message),
                ])?;
                w.flush()
            }
        }
    }
}

/// The progress of a run on stderr: a line redrawn in place on a terminal (indicatif: cut to
/// its width, ten draws a second at most), a plain line every thousand rows (and at the end)
/// otherwise.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    total: u64,
    rows: u64,
    accepted: u64,
    refused: u64,
    open: u64,
    not_sent: u64,
    started: Instant,
}

impl Progress {
    fn new(total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let style = indicatif::ProgressStyle::with_template("whish: [{bar:30}] {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("#.");
            indicatif::ProgressBar::with_draw_target(
                Some(total),
                indicatif::ProgressDrawTarget::stderr_with_hz(10),
            )
            .with_style(style)
        });
        Progress {
            bar,
            total,
            rows: 0,
            accepted: 0,
            refused: 0,
            open: 0,
            not_sent: 0,
            started: Instant::now(),
        }
    }

    fn row(&mut self, outcome: RowOutcome) {
        self.rows += 1;
        match outcome {
            RowOutcome::Accepted => self.accepted += 1,
            RowOutcome::Refused => self.refused += 1,
            RowOutcome::NotSent => self.not_sent += 1,
            _ => self.open += 1,
        }
        match &self.bar {
            Some(bar) => {
                bar.set_position(self.rows.min(self.total));
                bar.set_message(self.counts());
            }
            None if self.rows.is_multiple_of(1000) => eprintln!("whish: {}", self.counts()),
            None => {}
        }
    }

    fn counts(&self) -> String {
        let secs = self.started.elapsed().as_secs_f64().max(0.001);
        // Every row is reported, a row left unsent too (a stop, Ctrl-C): the count of rows
        // reported is not the count sent.
        format!(
            "{}/{} rows reported: {} accepted, {} refused, {} open, {} not sent ({:.0} rows/s)",
            self.rows,
            self.total,
            self.accepted,
            self.refused,
            self.open,
            self.not_sent,
            self.rows as f64 / secs
        )
    }

    fn done(&mut self) {
        if self.rows == 0 {
            return;
        }
        match &self.bar {
            // The bar gives way to the same counts as a plain line, which stays.
            Some(bar) => {
                bar.finish_and_clear();
                eprintln!("whish: {}", self.counts());
            }
            None if !self.rows.is_multiple_of(1000) => eprintln!("whish: {}", self.counts()),
            None => {}
        }
    }
}
