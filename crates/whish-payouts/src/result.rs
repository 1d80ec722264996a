//! What became of each row, and where it is written: a results file as CSV or JSON lines.

use std::io::Write;

use serde::Serialize;
use whish_core::{Amount, Currency, RequestId};

/// Where a row stands after a run, in the SDK's one vocabulary of outcomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum RowOutcome {
    /// The service accepted the transfer (this run or an earlier one): it exists.
    Accepted,
    /// The service refused it: nothing was created. Final for this Request-id.
    Refused,
    /// The service answered Pending: the outcome is unknown, not failed. Run the batch again
    /// (or `follow_up`) later: the same Request-id is read again, never a new transfer.
    Pending,
    /// The request may have arrived and its outcome is unknown: run the batch again.
    Unknown,
    /// This run sent nothing for this row: a bad row skipped on purpose, a row changed since it
    /// was recorded, a row whose exact transfer another process recorded while this run went
    /// (`code` `same-body-elsewhere`: another batch name, or a `transfer send`), a row the
    /// journal could not record before its send (`code` `journal-failed`), or a batch
    /// stopped before the row's turn (recorded in the journal as never sent before it is
    /// reported). Running the batch again sends it, once the check finds its exact transfer
    /// nowhere else (accepted or open under another Request-id, it is a bad row). Another
    /// process running the same batch at the same time may take the row and send it after
    /// this run recorded it: its journal entry then counts a second attempt.
    NotSent,
    /// The journal holds the row for a person to look at (an entry past its deadline or one
    /// this version cannot read): nothing is sent for it until they do.
    NeedsOperator,
}

impl RowOutcome {
    /// The outcome's name, as the results file writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            RowOutcome::Accepted => "accepted",
            RowOutcome::Refused => "refused",
            RowOutcome::Pending => "pending",
            RowOutcome::Unknown => "unknown",
            RowOutcome::NotSent => "not-sent",
            RowOutcome::NeedsOperator => "needs-operator",
        }
    }

    /// Every outcome, in the order the summary lists them.
    pub const ALL: [RowOutcome; 6] = [
        RowOutcome::Accepted,
        RowOutcome::Refused,
        RowOutcome::Pending,
        RowOutcome::Unknown,
        RowOutcome::NotSent,
        RowOutcome::NeedsOperator,
    ];

    /// True when running the batch again may still change it (pending, unknown, not sent).
    pub fn is_open(self) -> bool {
        matches!(
            self,
            RowOutcome::Pending | RowOutcome::Unknown | RowOutcome::NotSent
        )
    }
}

impl std::fmt::Display for RowOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line of the results: what became of one row of the file.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RowResult {
    /// The row's line in the file.
    pub line: u64,
    /// The row's reference, when it has one.
    pub reference: Option<String>,
    /// The Request-id the row was sent with (derived from the batch and the row).
    pub request_id: Option<RequestId>,
    /// Where it stands.
    pub outcome: RowOutcome,
    /// For an accepted row: `sent` (cash collection, SENT), `credited` (mobile wallet) or
    /// `confirmed` (a resend met `transfer.already.done` and the status read confirmed it).
    pub result: Option<String>,
    /// True when the outcome comes from the journal, recorded by an earlier run (nothing was
    /// sent for the row by this run).
    pub earlier_run: bool,
    /// The row's amount.
    pub amount: Option<Amount>,
    /// The row's currency.
    pub currency: Option<Currency>,
    /// The LTN number: what the receiver collects with (cash collection).
    pub ltn_number: Option<String>,
    /// The transfer id.
    pub transfer_id: Option<String>,
    /// The fees the service applied, when its answer said.
    pub fee: Option<Amount>,
    /// The service's failure code, for a refusal.
    pub code: Option<String>,
    /// Why, in a sentence, when the row was not accepted.
    pub message: Option<String>,
}

impl RowResult {
    pub(crate) fn new(line: u64, reference: Option<String>, outcome: RowOutcome) -> RowResult {
        RowResult {
            line,
            reference,
            request_id: None,
            outcome,
            result: None,
            earlier_run: false,
            amount: None,
            currency: None,
            ltn_number: None,
            transfer_id: None,
            fee: None,
            code: None,
            message: None,
        }
    }
}

/// The header of a results file written as CSV.
pub const RESULT_COLUMNS: &[&str] = &[
    "line",
    "reference",
    "request_id",
    "outcome",
    "result",
    "earlier_run",
    "amount",
    "currency",
    "ltn_number",
    "transfer_id",
    "fee",
    "code",
    "message",
];

/// The format of a results file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResultFormat {
    /// CSV with the header [`RESULT_COLUMNS`].
    Csv,
    /// One JSON object a line, with the same names as keys.
    JsonLines,
}

/// Writes results as they come, one row at a time, and flushes each: a run killed half way
/// leaves every finished row on disk.
pub struct ResultWriter<W: Write> {
    inner: Inner<W>,
}

enum Inner<W: Write> {
    Csv(Box<csv::Writer<W>>),
    Json(W),
}

impl<W: Write> std::fmt::Debug for ResultWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResultWriter")
    }
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(ToString::to_string).unwrap_or_default()
}

impl<W: Write> ResultWriter<W> {
    /// A writer of `format` into `out`; a CSV file starts with its header.
    ///
    /// # Errors
    ///
    /// The I/O error of writing the header.
    pub fn new(out: W, format: ResultFormat) -> std::io::Result<ResultWriter<W>> {
        let inner = match format {
            ResultFormat::Csv => {
                let mut w = csv::Writer::from_writer(out);
                w.write_record(RESULT_COLUMNS)
                    .map_err(std::io::Error::other)?;
                w.flush()?;
                Inner::Csv(Box::new(w))
            }
            ResultFormat::JsonLines => Inner::Json(out),
        };
        Ok(ResultWriter { inner })
    }

    /// Write one result and flush it.
    ///
    /// # Errors
    ///
    /// The I/O error of the write.
    pub fn write(&mut self, r: &RowResult) -> std::io::Result<()> {
        match &mut self.inner {
            Inner::Csv(w) => {
                w.write_record([
                    r.line.to_string(),
                    opt(&r.reference),
                    opt(&r.request_id),
                    r.outcome.to_string(),
                    opt(&r.result),
                    r.earlier_run.to_string(),
                    r.amount.map(|a| a.to_plain_string()).unwrap_or_default(),
                    r.currency
                        .as_ref()
                        .map(|c| c.code().to_owned())
                        .unwrap_or_default(),
                    opt(&r.ltn_number),
                    opt(&r.transfer_id),
                    r.fee.map(|a| a.to_plain_string()).unwrap_or_default(),
                    opt(&r.code),
                    opt(&r.message),
                ])
                .map_err(std::io::Error::other)?;
                w.flush()
            }
            Inner::Json(w) => {
                let mut line = serde_json::to_vec(&Json::of(r)).map_err(std::io::Error::other)?;
                line.push(b'\n');
                w.write_all(&line)?;
                w.flush()
            }
        }
    }
}

/// A result as a JSON-lines object: amounts as exact decimal text.
#[derive(Serialize)]
struct Json<'a> {
    line: u64,
    reference: &'a Option<String>,
    request_id: Option<i64>,
    outcome: RowOutcome,
    result: &'a Option<String>,
    earlier_run: bool,
    amount: Option<String>,
    currency: Option<&'a str>,
    ltn_number: &'a Option<String>,
    transfer_id: &'a Option<String>,
    fee: Option<String>,
    code: &'a Option<String>,
    message: &'a Option<String>,
}

impl<'a> Json<'a> {
    fn of(r: &'a RowResult) -> Json<'a> {
        Json {
            line: r.line,
            reference: &r.reference,
            request_id: r.request_id.map(RequestId::get),
            outcome: r.outcome,
            result: &r.result,
            earlier_run: r.earlier_run,
            amount: r.amount.map(|a| a.to_plain_string()),
            currency: r.currency.as_ref().map(Currency::code),
            ltn_number: &r.ltn_number,
            transfer_id: &r.transfer_id,
            fee: r.fee.map(|a| a.to_plain_string()),
            code: &r.code,
            message: &r.message,
        }
    }
}
