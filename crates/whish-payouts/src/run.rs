//! Running a batch: check the whole file, then send each row through the journal under its
//! derived Request-id, a bounded number at a time.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinSet;
use whish_core::{Amount, RequestId};
use whish_journal::{
    Entry, Journal, Operation, ReservedSend, SendsMark, Service, State, Unreserved,
};
use whish_money_transfer::TransferClient;

use crate::kept::{Kept, Parsed, SharedKept};
use crate::result::{RowOutcome, RowResult};
use crate::row::{Payout, RowError, payout};
use crate::send::{
    JOURNAL_FAILED, Planned, RECORDED_BEFORE, Sending, plan_row, row_result, send_row, unread_row,
};
use crate::{Batch, BatchError, key};

/// Refusals that created nothing and say nothing about the row itself (the account's balance
/// or daily limit, the receiver's daily limit): the next run of the batch sends the row again,
/// under the row's next Request-id. Every other refusal is final for the row. The journal's
/// prune keeps these entries (a row's attempts are read in order from the first).
pub const RETRYABLE: &[&str] = whish_money_transfer::TransferCode::RETRY_UNDER_NEW_KEY;

/// Refusals about the account, not the row: every row after would meet them too, so the batch
/// stops sending (unless told not to) and leaves the rest unsent, saying so.
pub const STOPPING: &[&str] = whish_money_transfer::TransferCode::ABOUT_THE_ACCOUNT;

/// The most attempts a row may take (each after a retryable refusal): a bound, not a plan.
const MAX_ATTEMPTS: u32 = 64;

/// Stops a running batch cleanly: no new row is sent; the rows in flight finish and are
/// recorded; the rest are reported not sent. Clone it into a Ctrl-C handler.
#[derive(Debug, Clone, Default)]
pub struct StopSignal {
    inner: Arc<StopInner>,
}

#[derive(Debug, Default)]
struct StopInner {
    stopped: AtomicBool,
    why: std::sync::Mutex<Option<String>>,
    notify: Notify,
}

impl StopSignal {
    /// A signal not yet given.
    pub fn new() -> StopSignal {
        StopSignal::default()
    }

    /// Stop, saying why (the first reason given is kept).
    pub fn stop(&self, why: impl Into<String>) {
        if let Ok(mut w) = self.inner.why.lock()
            && w.is_none()
        {
            *w = Some(why.into());
        }
        self.inner.stopped.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    /// True once stopped.
    pub fn is_stopped(&self) -> bool {
        self.inner.stopped.load(Ordering::SeqCst)
    }

    /// Why it was stopped.
    pub fn reason(&self) -> Option<String> {
        self.inner.why.lock().ok().and_then(|w| w.clone())
    }
}

/// How a batch runs.
#[derive(Debug, Clone)]
#[must_use]
pub struct RunOptions {
    pub(crate) concurrency: usize,
    pub(crate) rate: Option<f64>,
    pub(crate) skip_bad_rows: bool,
    pub(crate) stop_on_account_refusal: bool,
    pub(crate) stop: StopSignal,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            concurrency: 8,
            rate: None,
            skip_bad_rows: false,
            stop_on_account_refusal: true,
            stop: StopSignal::new(),
        }
    }
}

impl RunOptions {
    /// Eight rows in flight, no rate limit, nothing sent while any row is bad, a stop on an
    /// account-level refusal.
    pub fn new() -> RunOptions {
        RunOptions::default()
    }

    /// At most this many rows in flight at once (at least 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// At most this many rows started a second (the service's rate limits are not documented:
    /// ask your account manager).
    pub fn rate(mut self, per_second: f64) -> Self {
        self.rate = (per_second.is_finite() && per_second > 0.0).then_some(per_second);
        self
    }

    /// Send the good rows even when some are bad (the bad ones are reported, not sent).
    pub fn skip_bad_rows(mut self, yes: bool) -> Self {
        self.skip_bad_rows = yes;
        self
    }

    /// Stop sending at the first account-level refusal ([`STOPPING`]); default true.
    pub fn stop_on_account_refusal(mut self, yes: bool) -> Self {
        self.stop_on_account_refusal = yes;
        self
    }

    /// The signal that stops this run (Ctrl-C).
    pub fn stop_signal(mut self, stop: StopSignal) -> Self {
        self.stop = stop;
        self
    }
}

/// The check of a whole file, before anything is sent.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct CheckReport {
    /// Rows read (good and bad).
    pub rows: u64,
    /// Every bad row, with its line and column. A row changed since an earlier run recorded it
    /// is one (it would be refused by the journal, not sent).
    pub errors: Vec<RowError>,
    /// Where the check's look for bodies sent before ended: a run reads the sends recorded
    /// after it before each write of its rows.
    #[serde(skip)]
    seen: Option<SendsMark>,
    /// The rows read, for the run that follows (a small file is then read once).
    #[serde(skip)]
    kept: SharedKept,
}

/// Totals of one currency.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Totals {
    /// Rows accepted.
    pub accepted: u64,
    /// The sum of their amounts.
    pub amount: rust_decimal::Decimal,
    /// The sum of the fees the service reported for them (rows confirmed through status have
    /// none: reconcile for the full figure).
    pub fees: rust_decimal::Decimal,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct RunSummary {
    /// Rows in the file.
    pub rows: u64,
    /// How many rows ended in each outcome.
    pub outcomes: BTreeMap<RowOutcome, u64>,
    /// Accepted totals per currency code.
    pub totals: BTreeMap<String, Totals>,
    /// Why the run stopped before the end, when it did.
    pub stopped: Option<String>,
    /// Journal entries the start-up recovery settled (left open by an earlier run that died).
    pub recovered: u64,
    /// Open entries another live process holds (another run of the same batch?): their rows
    /// are reported unknown by this run.
    pub held_elsewhere: u64,
}

impl RunSummary {
    /// How many rows ended in `outcome`.
    pub fn count(&self, outcome: RowOutcome) -> u64 {
        self.outcomes.get(&outcome).copied().unwrap_or(0)
    }

    /// True when every row was accepted.
    pub fn all_accepted(&self) -> bool {
        self.count(RowOutcome::Accepted) == self.rows
    }

    fn add(&mut self, r: &RowResult) {
        *self.outcomes.entry(r.outcome).or_default() += 1;
        if r.outcome == RowOutcome::Accepted
            && let (Some(a), Some(c)) = (r.amount, &r.currency)
        {
            let t = self.totals.entry(c.code().to_owned()).or_default();
            t.accepted += 1;
            t.amount += a.value();
            t.fees += r.fee.map(Amount::value).unwrap_or_default();
        }
    }
}

/// The row's Request-id and what the journal holds under it: the first attempt (from `from`)
/// whose entry is not a retryable refusal.
pub(crate) async fn resolve(
    journal: &Journal,
    batch: &str,
    row_key: &str,
    derive: fn(&str, &str, u32) -> RequestId,
    operation: Operation,
) -> Result<(RequestId, Option<Entry>), BatchError> {
    resolve_from(journal, batch, row_key, derive, operation, 0)
        .await
        .map(|(id, entry, _)| (id, entry))
}

async fn resolve_from(
    journal: &Journal,
    batch: &str,
    row_key: &str,
    derive: fn(&str, &str, u32) -> RequestId,
    operation: Operation,
    from: u32,
) -> Result<Resolved, BatchError> {
    let mut earlier = None;
    for attempt in from..MAX_ATTEMPTS {
        let id = derive(batch, row_key, attempt);
        let entry = journal
            .entry(Service::MoneyTransfer, operation, &id.to_string())
            .await
            .map_err(BatchError::Journal)?;
        match entry {
            Some(e) if retryable(&e) => earlier = Some(e),
            other => return Ok((id, other, earlier)),
        }
    }
    Err(BatchError::Input(format!(
        "row {row_key} was refused for account limits {MAX_ATTEMPTS} times: look at it by hand"
    )))
}

/// A row's Request-id, the journal's entry under it, and the entry of the attempt before it
/// when that one was refused for an account limit (the row's recorded bytes, to which a row
/// sent under a later attempt must still be the same).
pub(crate) type Resolved = (RequestId, Option<Entry>, Option<Entry>);

/// [`resolve`] for many rows at once: one journal query for their first attempts, and one more
/// per row only when its first attempt was refused for an account limit.
pub(crate) async fn resolve_many(
    journal: &Journal,
    batch: &str,
    row_keys: &[String],
    derive: fn(&str, &str, u32) -> RequestId,
    operation: Operation,
) -> Result<Vec<(RequestId, Option<Entry>)>, BatchError> {
    let firsts: Vec<RequestId> = row_keys.iter().map(|k| derive(batch, k, 0)).collect();
    Ok(
        resolve_many_with_earlier(journal, batch, row_keys, &firsts, derive, operation)
            .await?
            .into_iter()
            .map(|(id, entry, _)| (id, entry))
            .collect(),
    )
}

/// [`resolve_many`], with each row's earlier attempt refused for an account limit; `firsts`
/// are the rows' first Request-ids (`derive`'s attempt 0 of each key).
pub(crate) async fn resolve_many_with_earlier(
    journal: &Journal,
    batch: &str,
    row_keys: &[String],
    firsts: &[RequestId],
    derive: fn(&str, &str, u32) -> RequestId,
    operation: Operation,
) -> Result<Vec<Resolved>, BatchError> {
    let keys: Vec<String> = firsts.iter().map(ToString::to_string).collect();
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let mut found: std::collections::HashMap<String, Entry> = journal
        .entries(Service::MoneyTransfer, operation, &refs)
        .await
        .map_err(BatchError::Journal)?
        .into_iter()
        .map(|e| (e.key.clone(), e))
        .collect();
    let mut out = Vec::with_capacity(row_keys.len());
    for (i, row_key) in row_keys.iter().enumerate() {
        match found.remove(&keys[i]) {
            Some(e) if retryable(&e) => {
                let (id, entry, later) =
                    resolve_from(journal, batch, row_key, derive, operation, 1).await?;
                out.push((id, entry, later.or(Some(e))));
            }
            other => out.push((firsts[i], other, None)),
        }
    }
    Ok(out)
}

/// How many rows are read, and looked up in the journal, at a time: also the most rows
/// reserved in the journal with one write before they are sent.
const CHUNK: usize = 256;

/// With a rate, how far ahead rows are reserved: the rows sent in this long.
const RESERVED_AHEAD: Duration = Duration::from_secs(5);

/// A row of a chunk looked up and reserved: settled already, or how it goes out.
enum Slot {
    Done(RowResult),
    Send(RowResult, Sending),
    /// The chunk's lookup failed: reported when it is handed on, by whether the batch had
    /// stopped by then (see [`unread_row`]).
    Unread(RowResult, Arc<str>),
}

/// A chunk's rows with the journal's word on each (one query for the chunk; none for a row
/// the check found unrecorded while nothing else was recorded since), and its fresh rows
/// reserved in the journal with one durable write before any is sent (once the batch is
/// stopping, recorded as never sent instead).
async fn prepare_chunk(
    journal: &Journal,
    transfers: &whish_journal::JournaledTransfer,
    client: &TransferClient,
    batch: &str,
    mut chunk: Vec<Payout>,
    stop: &StopSignal,
    mut repeats: Option<&mut Repeats>,
) -> Vec<Slot> {
    if chunk.is_empty() {
        return Vec::new();
    }
    // The entries may still change before a row is sent (another process): the journal's own
    // hold decides then. A row its check found under no entry is not looked up again while
    // nothing but this run's own rows was recorded since the check (a row recorded by another
    // process since may be final, refused or an operator's, and is looked up).
    let unchanged = match repeats.as_deref_mut() {
        Some(r) => r.nothing_new_since_check(journal).await,
        None => false,
    };
    let looked: Vec<&Payout> = chunk.iter().filter(|p| !(unchanged && p.absent)).collect();
    let keys: Vec<String> = looked.iter().map(|p| p.row_key()).collect();
    let firsts: Vec<RequestId> = looked.iter().map(|p| p.first).collect();
    let found = match resolve_many_with_earlier(
        journal,
        batch,
        &keys,
        &firsts,
        key::request_id,
        Operation::Send,
    )
    .await
    {
        Ok(v) => v,
        Err(e) => {
            let e: Arc<str> = Arc::from(e.to_string());
            return chunk
                .iter()
                .map(|p| Slot::Unread(row_result(p), e.clone()))
                .collect();
        }
    };
    let mut found = found.into_iter();
    let resolved: Vec<Resolved> = chunk
        .iter()
        .map(|p| {
            if unchanged && p.absent {
                (p.first, None, None)
            } else {
                found.next().expect("one lookup for each row looked up")
            }
        })
        .collect();
    let mut planned = Vec::with_capacity(chunk.len());
    let mut fresh = Vec::new();
    for (p, resolved) in chunk.iter_mut().zip(resolved) {
        // A row recorded as never sent (a run stopped before it) is sent again as a first
        // send: checked and reserved as a new row is (the journal records it afresh).
        let never_left = resolved.1.as_ref().is_some_and(Entry::never_left);
        match plan_row(client, p, resolved) {
            Planned::Done(r) => planned.push(Err(r)),
            Planned::Send {
                result,
                prepared,
                fresh: new,
            } if new || never_left => {
                fresh.push(prepared);
                planned.push(Ok((result, None)));
            }
            Planned::Send {
                result, prepared, ..
            } => planned.push(Ok((result, Some(Sending::Recorded(prepared))))),
        }
    }
    // Once the batch is stopping, its fresh rows are recorded as never sent instead (one
    // durable write for the chunk), so that "not sent" is the journal's word, not a guess made
    // while another process running the same batch may be recording and sending them.
    if let Some(why) = stop.reason() {
        let why = format!("not sent: {why}");
        let recorded = transfers.record_unsent(&fresh, &why).await;
        let mut recorded = match recorded {
            Ok(v) => v.into_iter().map(Ok).collect::<Vec<_>>(),
            Err(e) => fresh.iter().map(|_| Err(e.to_string())).collect(),
        }
        .into_iter();
        return planned
            .into_iter()
            .map(|p| match p {
                Err(r) => Slot::Done(r),
                Ok((r, Some(sending))) => Slot::Send(r, sending),
                Ok((mut r, None)) => {
                    match recorded.next() {
                        Some(Ok(Unreserved::NeverSent)) => {
                            r.outcome = RowOutcome::NotSent;
                            r.message = Some(why.clone());
                        }
                        Some(Ok(_)) => {
                            r.outcome = RowOutcome::Unknown;
                            r.message = Some(RECORDED_BEFORE.into());
                        }
                        Some(Err(e)) => {
                            r.outcome = RowOutcome::Unknown;
                            r.message = Some(format!(
                                "the batch stopped before this row was sent, and the journal could not record it as unsent ({e}): this run did not send it, but another process running this batch may have; run the batch again to settle it"
                            ));
                        }
                        None => unreachable!("one record for each fresh row"),
                    }
                    Slot::Done(r)
                }
            })
            .collect();
    }
    let words = match repeats {
        None => transfers
            .reserve(fresh)
            .await
            .into_iter()
            .map(Fresh::Held)
            .collect(),
        Some(repeats) => match repeats.reserve(journal, transfers, fresh).await {
            Ok(done) => done,
            Err(e) => {
                // Nothing was reserved or checked: the chunk's new rows are not sent.
                let e: Arc<str> = Arc::from(e.to_string());
                return planned
                    .into_iter()
                    .map(|p| match p {
                        Err(r) => Slot::Done(r),
                        Ok((r, Some(sending))) => Slot::Send(r, sending),
                        Ok((r, None)) => Slot::Unread(r, e.clone()),
                    })
                    .collect();
            }
        },
    };
    let mut words = words.into_iter();
    planned
        .into_iter()
        .map(|p| match p {
            Err(r) => Slot::Done(r),
            Ok((r, Some(sending))) => Slot::Send(r, sending),
            Ok((r, None)) => match words.next() {
                Some(Fresh::Held(one)) => Slot::Send(r, Sending::Reserved(one)),
                Some(Fresh::Elsewhere(key, state)) => Slot::Done(elsewhere(r, &key, state)),
                Some(Fresh::NotHeld(one)) => Slot::Send(r, Sending::NotHeld(one)),
                None => unreachable!("one word for each fresh row"),
            },
        })
        .collect()
}

/// A row not sent because its exact transfer was recorded under `key` while the run went.
fn elsewhere(mut r: RowResult, key: &str, state: State) -> RowResult {
    r.outcome = RowOutcome::NotSent;
    r.code = Some("same-body-elsewhere".into());
    r.message = Some(format!(
        "not sent: while this batch ran, this row's exact transfer was recorded under Request-id {key} ({}), by another process (another batch, or a `transfer send`): sending it here could pay it twice",
        state.as_str()
    ));
    r
}

/// What became of a row new to the journal when its chunk was recorded.
enum Fresh {
    /// Reserved (under the repeat check, when the run checks for repeats): to send.
    Held(ReservedSend),
    /// Its exact bytes recorded under another Request-id while the run went: not sent.
    Elsewhere(String, State),
    /// Reserved under the check but not held: given back when its turn comes, never sent on
    /// the strength of the check ([`Sending::NotHeld`]).
    NotHeld(ReservedSend),
}

/// A run's check for a payment made before, kept up to date as it goes: before each chunk's
/// rows are reserved, the sends other processes recorded since the check (or the chunk
/// before) are read under the journal's repeat check, so two runs of one file under two batch
/// names never both pay a row, nor a run and a `transfer send` of a row's body while either
/// is open.
pub(crate) struct Repeats {
    /// The client's service and account.
    target: String,
    /// Where the last read ended.
    mark: SendsMark,
    /// Sends other processes recorded since the check: a digest of their exact bytes, their
    /// Request-id and state (read again before a row is refused on their strength).
    recorded: SentBodies,
    /// The Request-ids this run reserved with its last chunk, when the mark could not be
    /// moved past them (the next read passes them): its own rows, never a repeat of one
    /// another.
    own: HashSet<String>,
    /// Every entry recorded since the check's mark is this run's own (the mark moved past
    /// them, never past anything read): a key the check found unrecorded is unrecorded still.
    only_own: bool,
}

impl Repeats {
    pub(crate) fn new(target: String, mark: SendsMark, only_own: bool) -> Repeats {
        Repeats {
            target,
            mark,
            recorded: SentBodies::new(),
            own: HashSet::new(),
            only_own,
        }
    }

    /// Whether nothing but this run's own reservations was recorded in the journal since the
    /// check (one read of the journal's last id): the rows the check found unrecorded need no
    /// second lookup then. A key recorded after this answer is found taken by the reservation,
    /// as one recorded after a lookup is.
    async fn nothing_new_since_check(&mut self, journal: &Journal) -> bool {
        if self.only_own && journal.sends_mark().await.ok() != Some(self.mark) {
            self.only_own = false;
        }
        self.only_own
    }

    /// Under the repeat check: read the sends recorded since the last read, then reserve the
    /// rows whose bodies none of them holds (a row recorded as never sent is recorded afresh
    /// by the reservation, so the next check of any process reads it); what became of each
    /// row, in order.
    async fn reserve(
        &mut self,
        journal: &Journal,
        transfers: &whish_journal::JournaledTransfer,
        fresh: Vec<whish_money_transfer::PreparedTransfer>,
    ) -> Result<Vec<Fresh>, whish_journal::JournalError> {
        if fresh.is_empty() {
            return Ok(Vec::new());
        }
        let mut check = journal.lock_repeat_check().await?;
        let held = match self.check(journal, fresh).await {
            Ok(held) => held,
            Err(e) => {
                check.release().await;
                return Err(e);
            }
        };
        // Each row's word on it (`None`: to reserve), and the rows to reserve, moved out.
        let (found, to_reserve): (Vec<_>, Vec<_>) = held
            .into_iter()
            .map(|(p, elsewhere)| match elsewhere {
                Some(e) => (Some(e), None),
                None => (None, Some(p)),
            })
            .unzip();
        let to_reserve = to_reserve.into_iter().flatten().collect();
        let reserved = transfers.reserve_under(&mut check, to_reserve).await;
        // Under the check still: when nothing else was recorded among this chunk's rows, the
        // next read starts after them.
        self.mark = self.mark.past(&reserved);
        let mut reserved = reserved.into_iter();
        self.own.clear();
        let mut words = Vec::with_capacity(found.len());
        for elsewhere in found {
            if let Some((key, state)) = elsewhere {
                words.push(Fresh::Elsewhere(key, state));
                continue;
            }
            let one = reserved
                .next()
                .expect("one reservation for each row reserved");
            if one.is_held() {
                self.own.insert(one.prepared().request_id().to_string());
                words.push(Fresh::Held(one));
            } else {
                words.push(Fresh::NotHeld(one));
            }
        }
        check.release().await;
        Ok(words)
    }

    /// Read the sends recorded since the last read, and for each row the send (another
    /// Request-id) that holds its exact bytes and may have paid, if any.
    async fn check(
        &mut self,
        journal: &Journal,
        fresh: Vec<whish_money_transfer::PreparedTransfer>,
    ) -> Result<
        Vec<(
            whish_money_transfer::PreparedTransfer,
            Option<(String, State)>,
        )>,
        whish_journal::JournalError,
    > {
        let (own, recorded) = (&self.own, &mut self.recorded);
        let before = self.mark;
        self.mark = journal
            .sends_that_may_have_paid_since(&self.target, self.mark, |s| {
                if !own.contains(s.key) {
                    recorded.insert(digest(s.request), (s.key.to_owned(), s.state));
                }
            })
            .await?;
        if self.mark != before {
            self.only_own = false;
        }
        // Most runs meet no other process's send: no row's bytes to digest then.
        if self.recorded.is_empty() {
            return Ok(fresh.into_iter().map(|p| (p, None)).collect());
        }
        let mut held = Vec::with_capacity(fresh.len());
        for p in fresh {
            let d = digest(p.body());
            let elsewhere = match self.recorded.get(&d) {
                Some((other, _)) if *other != p.request_id().to_string() => {
                    // As it is now: a send given back or refused since holds nothing. One
                    // gone (pruned) or unreadable is taken as it was read: it may have paid.
                    let now = journal
                        .entry(Service::MoneyTransfer, Operation::Send, other)
                        .await;
                    match now {
                        Ok(Some(e)) if !e.may_have_paid(&self.target) => {
                            self.recorded.remove(&d);
                            None
                        }
                        Ok(Some(e)) => Some((e.key, e.state)),
                        Ok(None) | Err(_) => self.recorded.get(&d).cloned(),
                    }
                }
                _ => None,
            };
            held.push((p, elsewhere));
        }
        Ok(held)
    }
}

/// A chunk's check, run as a task: its bad rows, and its rows with their transfers prepared.
type ChunkCheck = tokio::task::JoinHandle<Result<(Vec<RowError>, Vec<Payout>), BatchError>>;

/// A chunk's check, with where each of its rows is kept ([`Kept::push`]).
struct Looking {
    task: ChunkCheck,
    places: Vec<Option<usize>>,
}

impl Looking {
    /// The chunk's bad rows, its rows put in their places among the kept ones.
    async fn joined(self, kept: &mut Kept) -> Result<Vec<RowError>, BatchError> {
        let (errors, rows) = self
            .task
            .await
            .map_err(|e| BatchError::Input(format!("the check of a chunk failed: {e}")))??;
        for (place, row) in self.places.into_iter().zip(rows) {
            if let Some(place) = place {
                kept.put(place, row);
            }
        }
        Ok(errors)
    }
}

/// The sends this journal holds as accepted or still open to the batch's service and account,
/// by a digest of their exact bytes: their Request-id and state.
pub(crate) type SentBodies = HashMap<[u8; 32], (String, State)>;

fn digest(body: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(ring::digest::digest(&ring::digest::SHA256, body).as_ref());
    out
}

/// [`SentBodies`] of the sends to `target` (the client's service and account; an entry from
/// before 0.4, which records none, counts): the same payment made at another service (the
/// sandbox, where the file was tried first) is not this one.
async fn sent_bodies(journal: &Journal, target: &str) -> Result<SentBodies, BatchError> {
    let mut sent = SentBodies::new();
    journal
        .sends_that_may_have_paid(target, |s| {
            sent.insert(digest(s.request), (s.key.to_owned(), s.state));
        })
        .await
        .map_err(BatchError::Journal)?;
    Ok(sent)
}

/// The check of a chunk's rows against what the journal holds: a row the service would refuse
/// before it is sent, and a row changed since an earlier run recorded it. The rows come back
/// with their transfers as prepared here.
fn check_against_journal(
    client: &TransferClient,
    mut chunk: Vec<Payout>,
    resolved: Vec<Resolved>,
    sent: Option<&SentBodies>,
) -> (Vec<RowError>, Vec<Payout>) {
    let mut errors = Vec::new();
    // A journal holding no sends has no body to digest against.
    let sent = sent.filter(|s| !s.is_empty());
    for (p, (id, entry, earlier)) in chunk.iter_mut().zip(resolved) {
        p.absent = entry.is_none() && earlier.is_none() && id == p.first;
        let prepared = match client.prepare_send(p.request.clone().request_id(id)) {
            Ok(prepared) => p.prepared.insert(prepared),
            Err(e) => {
                errors.push(RowError::new(p.line, "", e.to_string()));
                continue;
            }
        };
        // A row new to this batch, or recorded as never sent (a run stopped before it), or to
        // be sent again under its next attempt (a refused attempt is not counted), whose exact
        // bytes the journal holds as sent under another
        // Request-id: the same file under another batch name (a typo pays every row again).
        if entry.as_ref().is_none_or(Entry::never_left)
            && let Some((key, state)) = sent.and_then(|s| s.get(&digest(prepared.body())))
        {
            errors.push(RowError::new(
                p.line,
                "",
                format!(
                    "this payment was already sent under Request-id {key} ({state}), from another batch name or an earlier batch: under this name it would be paid again; run it under its first batch name, or pass --allow-repeat (Batch::allow_repeats) if paying it again is meant"
                ),
            ));
            continue;
        }
        // The entry under this attempt, else the attempt refused before it: a row sent again
        // after an account limit is still the row that was recorded.
        if let Some(entry) = entry.as_ref().or(earlier.as_ref())
            && entry.request != prepared.body()
        {
            errors.push(RowError::new(
                p.line,
                "",
                format!(
                    "the row changed since an earlier run recorded it (Request-id {}, {}): a changed row is refused; pay a correction as a new row with its own reference",
                    entry.key, entry.state
                ),
            ));
        }
    }
    (errors, chunk)
}

fn retryable(e: &Entry) -> bool {
    crate::send::refusal_code(e).is_some_and(|c| RETRYABLE.contains(&c))
}

impl Batch {
    /// Check every row of the file, sending nothing: each bad row with its line and column, a
    /// reference used twice, and a row changed since an earlier run recorded it under its
    /// Request-id. Reads the file once, as a stream; keeps 8 bytes a row to find duplicates,
    /// and the rows themselves while they take less than about 8 MB in memory (their values,
    /// the transfer prepared from each and 512 bytes a row: some 6 000 rows), with what the
    /// journal held under each, for a run of this report ([`run_checked`](Self::run_checked)),
    /// which then sends those transfers without reading the file again (a larger file is read
    /// again by the run).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(
    /// #     journal: whish_journal::Journal,
    /// #     client: whish_money_transfer::TransferClient,
    /// # ) -> Result<(), Box<dyn std::error::Error>> {
    /// use whish_payouts::{Batch, Defaults};
    /// let batch = Batch::new("aid-2026-11-24", "aid-2026-11-24.csv", Defaults::new())?;
    /// let report = batch.check(&journal, &client).await?;
    /// for bad in &report.errors {
    ///     eprintln!("{bad}");
    /// }
    /// println!("{} rows, {} bad: nothing was sent", report.rows, report.errors.len());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// A `BatchError` when the file cannot be read or the journal cannot be reached (bad rows
    /// are in the report, not errors).
    pub async fn check(
        &self,
        journal: &Journal,
        client: &TransferClient,
    ) -> Result<CheckReport, BatchError> {
        let mut report = CheckReport::default();
        let mut seen: HashSet<i64> = HashSet::new();
        let sent = if self.allow_repeats {
            None
        } else {
            // Taken under the repeat check: every send recorded under it later (a `transfer
            // send`, another batch's rows) is after the mark, and the run reads it then.
            let lock = journal
                .lock_repeat_check()
                .await
                .map_err(BatchError::Journal)?;
            let mark = journal.sends_mark().await;
            lock.release().await;
            report.seen = Some(mark.map_err(BatchError::Journal)?);
            Some(Arc::new(sent_bodies(journal, &client.target()).await?))
        };
        let mut rows = self.rows()?;
        let mut kept = Kept::new(
            self.configuration,
            client.callback_addresses(),
            Some(journal.clone()),
        );
        // Each chunk's journal lookup and comparison run as a task of their own while the next
        // chunk is read and parsed (the two cores share the check).
        let mut looking: Option<Looking> = None;
        loop {
            let mut chunk: Vec<Payout> = Vec::with_capacity(CHUNK);
            let mut places = Vec::with_capacity(CHUNK);
            let mut end = false;
            while chunk.len() < CHUNK {
                let Some(row) = rows.next_row() else {
                    end = true;
                    break;
                };
                report.rows += 1;
                let raw = row.as_ref().ok();
                let parsed = row
                    .as_ref()
                    .map_err(Clone::clone)
                    .and_then(|raw| payout(raw, &self.defaults, &self.id, !self.key_by_line));
                match parsed {
                    Ok(p) if seen.insert(p.first.get()) => {
                        // Kept once its chunk's check has prepared its transfer.
                        places.push(kept.push(raw, Err(None)));
                        chunk.push(p);
                    }
                    Ok(p) => {
                        report.errors.push(RowError::new(
                            p.line,
                            if p.reference.is_some() {
                                "reference"
                            } else {
                                ""
                            },
                            "the same reference appears on an earlier line: each row needs its own",
                        ));
                        kept.push(raw, Ok(p));
                    }
                    Err(errors) => {
                        kept.push(raw, Err(errors.first().map(ToString::to_string)));
                        report.errors.extend(errors);
                    }
                }
            }
            if let Some(earlier) = looking.take() {
                report.errors.extend(earlier.joined(&mut kept).await?);
            }
            if !chunk.is_empty() {
                let (journal, client, batch) = (journal.clone(), client.clone(), self.id.clone());
                let sent = sent.clone();
                let task = tokio::spawn(async move {
                    let keys: Vec<String> = chunk.iter().map(Payout::row_key).collect();
                    let firsts: Vec<RequestId> = chunk.iter().map(|p| p.first).collect();
                    let resolved = resolve_many_with_earlier(
                        &journal,
                        &batch,
                        &keys,
                        &firsts,
                        key::request_id,
                        Operation::Send,
                    )
                    .await?;
                    Ok(check_against_journal(
                        &client,
                        chunk,
                        resolved,
                        sent.as_deref(),
                    ))
                });
                looking = Some(Looking { task, places });
            }
            if end {
                break;
            }
        }
        if let Some(last) = looking {
            report.errors.extend(last.joined(&mut kept).await?);
        }
        report.errors.sort_by_key(|e| e.line);
        report.kept = SharedKept(Arc::new(kept));
        Ok(report)
    }

    /// Run the batch: [`check`](Self::check) the whole file (nothing is sent while any row is
    /// bad, unless [`RunOptions::skip_bad_rows`]), then send each row through the journal under
    /// its derived Request-id, at most [`RunOptions::concurrency`] at a time, and hand each
    /// row's result to `sink` as it comes (in the order rows finish).
    ///
    /// Every row is recorded in the journal before it is sent. Running the same file again
    /// (after a crash, a Ctrl-C, or by mistake) pays no row twice: a row the journal holds as
    /// accepted is reported from the journal without a call; an open one is sent again with
    /// the same Request-id and bytes (a resend, which the service never turns into a second
    /// transfer); a row refused for an account limit is sent under its next Request-id.
    ///
    /// # Errors
    ///
    /// [`BatchError::BadRows`] (nothing sent) when rows are bad; [`BatchError::Input`] or
    /// [`BatchError::Journal`] (nothing sent) when the file or the journal cannot be read before
    /// the first send; [`BatchError::Recovery`] when the start-up recovery failed part way (it
    /// may have sent open requests again); [`BatchError::Results`] when `sink` fails (the rows
    /// in flight finish first).
    pub async fn run(
        &self,
        journal: &Journal,
        client: &TransferClient,
        options: &RunOptions,
        sink: &mut (dyn FnMut(&RowResult) -> std::io::Result<()> + Send),
    ) -> Result<RunSummary, BatchError> {
        let check = self.check(journal, client).await?;
        self.run_checked(journal, client, check, options, sink)
            .await
    }

    /// [`run`](Self::run) with the check already made (to show it, or the number of rows, before
    /// sending). The rows sent are those the check read when it kept them all (rows taking
    /// less than about 8 MB in memory, a few thousand; checked by this same `Batch` value),
    /// else the file as read again, which must not have changed since: either way each row is
    /// checked against the journal again as it is sent (a row changed since the journal
    /// recorded it is never sent). A row the check found unrecorded in this same journal
    /// (`journal` a clone of the one checked) is recorded without a second look while nothing
    /// but this run's own rows was recorded in it since the check; once anything else was,
    /// every row is looked up again.
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run).
    pub async fn run_checked(
        &self,
        journal: &Journal,
        client: &TransferClient,
        check: CheckReport,
        options: &RunOptions,
        sink: &mut (dyn FnMut(&RowResult) -> std::io::Result<()> + Send),
    ) -> Result<RunSummary, BatchError> {
        if !check.errors.is_empty() && !options.skip_bad_rows {
            return Err(BatchError::BadRows(check));
        }
        // The file is opened before anything is sent: from the recovery on, an error can no
        // longer say that nothing was sent. Its rows are those the check kept, when it kept
        // them all; else they are read again, as the check read them.
        let mut rows = self.rows()?;
        let same_journal = check.kept.read(journal);
        let mut kept = check
            .kept
            .take_for(
                self.configuration,
                client.callback_addresses(),
                same_journal,
            )
            .map(Vec::into_iter);
        let mut next_row = move || -> Option<Parsed> {
            if let Some(kept) = kept.as_mut() {
                return kept.next();
            }
            rows.next_row().map(|row| {
                row.map_err(|e| e.first().map(ToString::to_string))
                    .and_then(|raw| {
                        payout(&raw, &self.defaults, &self.id, !self.key_by_line)
                            .map_err(|e| e.first().map(ToString::to_string))
                    })
            })
        };
        // First, finish what a run that died left open (the journal's start-up recovery, for the
        // transfer service): an entry a dead process of this host held is taken at once, so
        // that its row is settled, not reported unknown because a dead process "holds" it.
        let recovered = journal
            .recover(
                &whish_journal::Clients::new().transfer(client.clone()),
                &whish_journal::Recovery::new(),
            )
            .await
            .map_err(BatchError::Recovery)?;
        let bad: BTreeMap<u64, String> = check
            .errors
            .iter()
            .map(|e| (e.line, e.to_string()))
            .collect();
        let mut summary = RunSummary {
            rows: check.rows,
            recovered: recovered.changes.len() as u64,
            held_elsewhere: recovered.held_elsewhere.len() as u64,
            ..RunSummary::default()
        };
        let batch: Arc<str> = Arc::from(self.id.as_str());
        // The check's mark is of the journal it read: a run on another reads that one's
        // recent sends whole (the default mark), as a check of it would have.
        let seen = check.seen.filter(|_| same_journal);
        let mut repeats = (!self.allow_repeats).then(|| {
            Repeats::new(
                client.target().to_string(),
                seen.unwrap_or_default(),
                seen.is_some(),
            )
        });
        let stop = options.stop.clone();
        let mut tasks: JoinSet<RowResult> = JoinSet::new();
        let mut ticker = options.rate.map(|r| {
            let mut t = tokio::time::interval(Duration::from_secs_f64(1.0 / r));
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            t
        });
        let mut sink_error: Option<std::io::Error> = None;
        let mut deliver = |summary: &mut RunSummary, r: RowResult, stop: &StopSignal| {
            if options.stop_on_account_refusal
                && r.outcome == RowOutcome::Refused
                && !r.earlier_run
                && r.code.as_deref().is_some_and(|c| STOPPING.contains(&c))
            {
                stop.stop(format!(
                    "line {} was refused with `{}`, a refusal of the account: the rows not yet sent were left unsent; run the batch again when it is lifted",
                    r.line,
                    r.code.as_deref().unwrap_or_default()
                ));
            }
            if r.code.as_deref() == Some(JOURNAL_FAILED) {
                // The row's own message ends "nothing was sent" when its insert provably never
                // committed: true of that row, and said of it, never of the run.
                let message = r.message.as_deref().unwrap_or_default();
                let message = message.strip_suffix("; nothing was sent").map_or_else(
                    || message.to_owned(),
                    |m| format!("{m}; that row was not sent"),
                );
                stop.stop(format!(
                    "the journal failed on line {} ({message}): the rows not yet sent were left unsent; make the journal work again (room on its disk, its database up), then run the batch again",
                    r.line,
                ));
            }
            summary.add(&r);
            if sink_error.is_none()
                && let Err(e) = sink(&r)
            {
                stop.stop(format!("the results could not be written: {e}"));
                sink_error = Some(e);
            }
        };
        let transfers = journal.transfer(client.clone());
        // Rows are reserved a chunk ahead, so a chunk must be sent within a few seconds, well
        // inside the journal's lease: with a rate, that is fewer rows than a full chunk.
        let chunk_size = options.rate.map_or(CHUNK, |r| {
            ((r * RESERVED_AHEAD.as_secs_f64()).ceil() as usize)
                .clamp(options.concurrency.max(1), CHUNK)
        });
        let mut chunk: Vec<Payout> = Vec::with_capacity(chunk_size);
        // The first chunks are small, so the first sends start at once; they double up to
        // `chunk_size` (a chunk is prepared while the one before goes out).
        let mut this_chunk = (2 * options.concurrency).clamp(1, chunk_size);
        let mut ended = false;
        // The chunk ready to go: looked up and reserved while the one before it was sent.
        let mut ready: Vec<Slot> = Vec::new();
        loop {
            while !ended && chunk.len() < this_chunk {
                // A bad row (only with skip_bad_rows): reported, never sent.
                match next_row() {
                    None => ended = true,
                    Some(Ok(p)) if !bad.contains_key(&p.line) => chunk.push(p),
                    Some(Ok(p)) => {
                        let mut r = row_result(&p);
                        r.code = Some("bad-row".into());
                        r.message = bad.get(&p.line).cloned();
                        deliver(&mut summary, r, &stop);
                    }
                    Some(Err(why)) => {
                        let line = why
                            .as_deref()
                            .and_then(|w| w.strip_prefix("line "))
                            .and_then(|w| w.split([',', ':']).next())
                            .and_then(|n| n.parse().ok())
                            .unwrap_or(0);
                        let mut r = RowResult::new(line, None, RowOutcome::NotSent);
                        r.code = Some("bad-row".into());
                        r.message = why;
                        deliver(&mut summary, r, &stop);
                    }
                }
            }
            if chunk.is_empty() && ready.is_empty() {
                break;
            }
            // The next chunk is looked up and reserved while this one goes out: the journal's
            // read and its one durable write for a chunk never stall the sends.
            this_chunk = (this_chunk * 2).min(chunk_size);
            let preparing = prepare_chunk(
                journal,
                &transfers,
                client,
                &batch,
                std::mem::take(&mut chunk),
                &stop,
                repeats.as_mut(),
            );
            let sending = async {
                for slot in std::mem::take(&mut ready) {
                    let (r, sending) = match slot {
                        Slot::Done(r) => {
                            deliver(&mut summary, r, &stop);
                            continue;
                        }
                        Slot::Unread(r, e) => {
                            let r = unread_row(r, &e, stop.is_stopped());
                            deliver(&mut summary, r, &stop);
                            continue;
                        }
                        Slot::Send(r, sending) => (r, sending),
                    };
                    while tasks.len() >= options.concurrency {
                        if let Some(done) = tasks.join_next().await {
                            deliver(&mut summary, joined(done), &stop);
                        }
                    }
                    if !stop.is_stopped()
                        && let Some(t) = ticker.as_mut()
                    {
                        tokio::select! {
                            _ = t.tick() => {}
                            () = stop.inner.notify.notified() => {}
                        }
                    }
                    let held_back = stop.is_stopped().then(|| {
                        format!(
                            "not sent: {}",
                            stop.reason()
                                .unwrap_or_else(|| "the batch was stopped".into())
                        )
                    });
                    // Boxed: the row's future is several kilobytes, moved into the task by pointer
                    // instead of copied twice on its way in.
                    tasks.spawn(Box::pin(send_row(transfers.clone(), r, sending, held_back)));
                    // Hand over what finished meanwhile, without waiting.
                    while let Some(done) = tasks.try_join_next() {
                        deliver(&mut summary, joined(done), &stop);
                    }
                }
            };
            let ((), next) = tokio::join!(sending, preparing);
            ready = next;
        }
        while let Some(done) = tasks.join_next().await {
            deliver(&mut summary, joined(done), &stop);
        }
        // The outcomes the journal records after their calls returned are written, and made
        // durable, before the run says it is done (a run again then reads them).
        journal.flush().await;
        summary.stopped = stop.reason();
        if let Some(e) = sink_error {
            return Err(BatchError::Results(e));
        }
        Ok(summary)
    }
}

/// A task's result; a task that panicked (a bug) is a row whose outcome is unknown, never lost.
fn joined(done: Result<RowResult, tokio::task::JoinError>) -> RowResult {
    done.unwrap_or_else(|e| {
        let mut r = RowResult::new(0, None, RowOutcome::Unknown);
        r.message = Some(format!("the row's task failed: {e}; run the batch again"));
        r
    })
}
