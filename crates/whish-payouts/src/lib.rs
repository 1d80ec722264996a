//! Payouts at scale: a file of transfers into Lebanon sent as one resumable, journaled batch,
//! its follow-up, and the end-of-day reconciliation finance signs.
//!
//! Remittance partners, payroll for people working from Lebanon and aid organisations paying
//! cash assistance do not send one transfer: they send a file of them, and at the end of the
//! day someone must prove what went out, what was collected and what it cost. Hand-written,
//! that loop and its resume logic are where double payments come from. Here:
//!
//! - [`Batch::check`] reads the whole file first (CSV with a header, or JSON lines: see
//!   [`COLUMNS`]) and reports every bad row with its line and column; [`Batch::run`] sends
//!   nothing while any row is bad.
//! - Every row's Request-id is **derived** from the batch's name and the row's reference (or
//!   its line): [`key::request_id`]. Each row is recorded in the [journal](whish_journal)
//!   before it is sent. Running the same file again, after a crash, a Ctrl-C or by mistake,
//!   pays no row twice; a row changed since it was recorded is refused, not sent.
//! - Rows go out a bounded number at a time, optionally at a bounded rate; an account-level
//!   refusal (the balance, the daily limit) stops the batch and leaves the rest unsent, saying
//!   so; a [`StopSignal`] (Ctrl-C) stops it cleanly.
//! - Each row's [`RowResult`] goes to a results file ([`ResultWriter`], CSV or JSON lines) as it
//!   finishes.
//! - [`Batch::follow_up`] reads which rows were collected, still wait, or were cancelled (the
//!   status endpoint, authoritative), and [`Batch::cancel_uncollected`] cancels the rows still
//!   uncollected after a date, each cancel journaled.
//! - [`reconcile::transfers`] joins the journal, the activity log and the statement by Request-id.
//!
//! # Examples
//!
//! ```no_run
//! # async fn run(client: whish_money_transfer::TransferClient) -> Result<(), Box<dyn std::error::Error>> {
//! use whish_money_transfer::{CountryId, Customer, FirstName, LastName};
//! use whish_payouts::{Batch, Defaults, ResultFormat, ResultWriter, RunOptions};
//!
//! let journal = whish_journal::Journal::open("sqlite:payouts-journal.sqlite").await?;
//! let defaults = Defaults::new()
//!     .from_country(CountryId::LEBANON)
//!     .sender(Customer::new(FirstName::new("Relief"), LastName::new("Org"), "+9611000000"));
//! let batch = Batch::new("aid-2026-11-24", "aid-2026-11-24.csv", defaults)?;
//! let mut results = ResultWriter::new(std::fs::File::create("results.csv")?, ResultFormat::Csv)?;
//! let summary = batch
//!     .run(&journal, &client, &RunOptions::new().concurrency(16), &mut |r| results.write(r))
//!     .await?;
//! println!("{} of {} rows accepted", summary.count(whish_payouts::RowOutcome::Accepted), summary.rows);
//! # Ok(()) }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

mod follow_up;
mod kept;
pub mod key;
mod read;
pub mod reconcile;
mod result;
mod row;
mod run;
mod send;

use std::path::{Path, PathBuf};

pub use follow_up::{Collection, FollowUpRow, Source};
pub use read::Format;
pub use result::{RESULT_COLUMNS, ResultFormat, ResultWriter, RowOutcome, RowResult};
pub use row::{COLUMNS, Column, Defaults, RowError};
pub use run::{CheckReport, RETRYABLE, RunOptions, RunSummary, STOPPING, StopSignal, Totals};
pub use send::JOURNAL_FAILED;

/// Why a batch could not be checked, run or followed up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    /// Rows are bad: nothing was sent. The report lists each with its line and column.
    #[error("{} of {} rows are bad; nothing was sent (first: {})", .0.errors.len(), .0.rows, .0.errors.first().map(ToString::to_string).unwrap_or_default())]
    BadRows(CheckReport),
    /// The file cannot be read, or is not a batch file.
    #[error("{0}")]
    Input(String),
    /// The journal cannot be read or written (before anything was sent).
    #[error("the journal: {0}")]
    Journal(#[source] whish_journal::JournalError),
    /// The journal's start-up recovery (a run, or a cancel run, settles what an earlier run
    /// left open first) failed part way. It may have sent some of those open requests again
    /// (the same requests under their own keys, never second ones; what it learnt is in the
    /// journal); none of this run's rows was started. Run the same command again.
    #[error("the journal's start-up recovery failed part way: {0}")]
    Recovery(#[source] whish_journal::JournalError),
    /// The results could not be written (the rows in flight finished first, and the journal
    /// holds every outcome: run the batch again to write them).
    #[error("the results could not be written: {0}")]
    Results(#[source] std::io::Error),
}

impl BatchError {
    pub(crate) fn io(path: &Path, e: std::io::Error) -> BatchError {
        BatchError::Input(format!("cannot read {}: {e}", path.display()))
    }
}

/// A batch: a name, a file and its defaults. The name is part of every row's Request-id: the
/// same file run under the same name is the same payments; under another name it is another
/// batch (and would pay every row again). Name a batch once, for good (`payroll-2026-11`).
#[derive(Debug, Clone)]
pub struct Batch {
    id: String,
    path: PathBuf,
    format: Format,
    defaults: Defaults,
    key_by_line: bool,
    allow_repeats: bool,
    /// This configuration's mark (see `kept`): new whenever an option changes.
    configuration: u64,
}

impl Batch {
    /// The batch `name` in `path`, its format told by its extension (`.csv`, or `.jsonl`,
    /// `.ndjson`, `.json` for JSON lines).
    ///
    /// # Errors
    ///
    /// [`BatchError::Input`] when the name is empty or the extension names no format.
    pub fn new(
        name: impl Into<String>,
        path: impl AsRef<Path>,
        defaults: Defaults,
    ) -> Result<Batch, BatchError> {
        let path = path.as_ref();
        let format = Format::of_path(path).ok_or_else(|| {
            BatchError::Input(format!(
                "{}: name a batch file .csv or .jsonl (or use Batch::with_format)",
                path.display()
            ))
        })?;
        Batch::with_format(name, path, format, defaults)
    }

    /// The batch `name` in `path`, read as `format`.
    ///
    /// # Errors
    ///
    /// [`BatchError::Input`] when the name is empty.
    pub fn with_format(
        name: impl Into<String>,
        path: impl AsRef<Path>,
        format: Format,
        defaults: Defaults,
    ) -> Result<Batch, BatchError> {
        let id = name.into();
        if id.trim().is_empty() {
            return Err(BatchError::Input("a batch needs a name".into()));
        }
        Ok(Batch {
            id,
            path: path.as_ref().to_owned(),
            format,
            defaults,
            key_by_line: false,
            allow_repeats: false,
            configuration: kept::new_configuration(),
        })
    }

    /// Let rows without a `reference` be known by their line (`line:N` in their Request-id).
    /// Off by default: such a row is a bad row, because its line is not the payment: a line
    /// added above it shifts every row below to a line never paid, and the same rows saved in
    /// the other format (CSV counts its header line, JSON lines does not) are all other lines,
    /// so either pays rows again. Turn it on only for a file that will never be edited or
    /// converted, or to finish a batch started without references. The follow-up looks rows
    /// up by their line either way.
    pub fn key_rows_by_line(mut self, yes: bool) -> Self {
        self.key_by_line = yes;
        self.configuration = kept::new_configuration();
        self
    }

    /// Pay rows this journal already holds as sent (accepted, or still open) to the same
    /// service and account under another Request-id, the same bytes (the same file run under
    /// another batch name, or the same payment in an earlier batch). Off by default:
    /// [`check`](Self::check) reports each such row as bad, naming the Request-id it was sent
    /// under, because a batch name mistyped on a second run would pay every row again. Turn it
    /// on for a batch that repeats an earlier one on purpose (the same payroll next month).
    pub fn allow_repeats(mut self, yes: bool) -> Self {
        self.allow_repeats = yes;
        self.configuration = kept::new_configuration();
        self
    }

    /// The batch's name.
    pub fn name(&self) -> &str {
        &self.id
    }

    fn rows(&self) -> Result<read::Rows, BatchError> {
        read::open(&self.path, self.format)
    }
}

/// The examples of this crate's README, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;
