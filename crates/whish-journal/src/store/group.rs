//! Group commit for SQLite: the intents of concurrent sends share one durable commit, and their
//! outcomes one relaxed commit.
//!
//! SQLite has one writer, and every commit in `synchronous = FULL` waits for its fsync: sixteen
//! sends starting at once queued sixteen fsyncs, one after the other. Here one task per journal
//! takes every request waiting (up to [`GROUP`] intents and [`GROUP`] outcomes), writes the
//! outcomes with one statement on the relaxed connection, then the intents with one statement in
//! one transaction on the synchronous connection, committed once (its fsync covers the outcomes
//! before it too: the WAL is appended to in order), and answers each.
//!
//! Every write of this process to the file takes the journal's write turn first (an async
//! mutex): the writer task for each group, a caller writing alone, and every other write of the
//! journal. SQLite lets one connection write at a time and makes the others sleep and try again
//! (a millisecond at least); within one process the turn hands the file over instead.
//!
//! A request that finds the turn free writes itself at once, in its own future: nothing waits
//! for a timer or a hop to the task, so a single send pays no added latency. Requests that find
//! it taken wait in the queue and go in the next group.
//!
//! Failure is all or nothing: when a group's statement or commit fails, every request in it is
//! answered with the error. An intent's caller then records its request as never sent
//! (`settle_lost_insert`), exactly as when its own insert failed; an outcome's caller leaves its
//! entry open for recovery, exactly as when its own update failed. A caller whose future is
//! dropped while its request waits changes nothing for the group: its request is written with
//! the others (an intent then stays open for recovery, as after a crash), its answer dropped.
//! The task ends when the journal's last handle is dropped. (PostgreSQL needs none of this:
//! concurrent commits on its connections already share a WAL flush, and it has no single
//! writer.)

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use sqlx::Row;
use sqlx::sqlite::SqlitePool;
use tokio::sync::{Mutex, MutexGuard, mpsc, oneshot};

use crate::error::{JournalError, JournalErrorKind};
use crate::store::Lease;

/// The most intents (and the most outcomes) one group carries.
pub(crate) const GROUP: usize = 64;

/// One intent to insert.
pub(crate) struct Job {
    pub service: &'static str,
    pub operation: &'static str,
    pub key: String,
    pub context: Option<String>,
    pub body: Vec<u8>,
    pub owner: String,
    pub lease_ms: i64,
    /// The first fencing token of the entry, drawn for this insert (`store::insert_token`).
    pub token: i64,
    /// The service and account the request is for.
    pub target: String,
}

/// One outcome to record under a lease.
pub(crate) struct Finish {
    pub lease: Lease,
    pub owner: String,
    pub state: &'static str,
    pub outcome: String,
    pub refs: String,
    /// For an outcome nobody waits for (recorded after its call returned): its place on the
    /// journal's list of background writes, given up once it is written (or failed).
    pub done: Option<crate::background::Done>,
}

/// An intent's answer: its lease, or None when its key is recorded already.
type Inserted = Result<Option<Lease>, JournalError>;

/// An outcome's answer: false when the lease was no longer the caller's (nothing written).
type Finished = Result<bool, JournalError>;

/// What the writer task is handed, with where its answer goes.
enum Work {
    Intent(Job, oneshot::Sender<Inserted>),
    /// An outcome. One nobody waits for (its `done` is set) lets the writer wait up to
    /// [`LINGER`] for more before it writes, so that a batch's outcomes go a group to a
    /// statement instead of one each.
    RecordedOutcome(Finish, oneshot::Sender<Finished>),
    /// Somebody waits for the outcomes gathered so far: write them now.
    Hurry,
}

/// An outcome nobody waits for.
fn is_detached(w: &Work) -> bool {
    matches!(w, Work::RecordedOutcome(f, _) if f.done.is_some())
}

/// How long the writer gathers outcomes nobody waits for before it writes them, unless
/// somebody waits for them meanwhile (a flush, a read of the journal, a recovery: `hurry`), or
/// a full group comes first. Sends one at a time (a few hundred microseconds each) then share
/// one statement by the tens, where each relaxed commit costs the process about as much CPU as
/// a send and makes the next intent read its pages again. An outcome not yet written leaves its
/// entry open and held, as after a crash: what recovery handles.
pub(crate) const LINGER: std::time::Duration = std::time::Duration::from_millis(20);

/// The handle of a journal's writer task and its write turn; cheap to clone. The task ends when
/// every handle is dropped.
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    queue: mpsc::UnboundedSender<Work>,
    turn: Arc<Mutex<()>>,
    /// Requests handed to the task and not answered yet.
    waiting: Arc<AtomicUsize>,
    /// How many groups of intents the task wrote.
    #[cfg_attr(not(test), allow(dead_code))]
    groups: Arc<AtomicU64>,
    /// Held by the task while it runs.
    #[cfg_attr(not(test), allow(dead_code))]
    alive: Weak<()>,
    /// The runtime the task runs on.
    runtime: tokio::runtime::Id,
    /// How long the task gathers outcomes nobody waits for, in microseconds ([`LINGER`]).
    linger_us: Arc<AtomicU64>,
}

impl Writer {
    /// Start the writer: intents on `pool` (the synchronous pool), outcomes on `relaxed`; `now`
    /// is the database clock's SQL.
    pub(crate) fn start(pool: SqlitePool, relaxed: SqlitePool, now: &'static str) -> Writer {
        let turn = Arc::new(Mutex::new(()));
        let groups = Arc::new(AtomicU64::new(0));
        let waiting = Arc::new(AtomicUsize::new(0));
        let (queue, work) = mpsc::unbounded_channel();
        let alive = Arc::new(());
        let linger_us = Arc::new(AtomicU64::new(LINGER.as_micros() as u64));
        let writer = Writer {
            queue,
            turn: turn.clone(),
            waiting: waiting.clone(),
            groups: groups.clone(),
            alive: Arc::downgrade(&alive),
            runtime: tokio::runtime::Handle::current().id(),
            linger_us: linger_us.clone(),
        };
        let task = Task {
            pool,
            relaxed,
            now,
            turn,
            waiting,
            groups,
            linger_us,
            _alive: alive,
        };
        tokio::spawn(task.run(work));
        writer
    }

    /// The write turn, when it is free now: the caller writes its own request at once.
    pub(crate) fn try_turn(&self) -> Option<MutexGuard<'_, ()>> {
        self.turn.try_lock().ok()
    }

    /// The write turn, waited for: every write of this process to the file takes it.
    pub(crate) async fn turn(&self) -> MutexGuard<'_, ()> {
        self.turn.lock().await
    }

    /// Hand an intent to the writer; its answer. `Err(job)` when the writer is gone (its
    /// runtime ended): the caller writes it itself.
    pub(crate) async fn insert(&self, job: Job) -> Result<Inserted, Job> {
        let (answer, answered) = oneshot::channel();
        self.waiting.fetch_add(1, Ordering::SeqCst);
        match self.queue.send(Work::Intent(job, answer)) {
            Ok(()) => Ok(answered.await.unwrap_or_else(|_| Err(stopped()))),
            Err(mpsc::error::SendError(Work::Intent(job, _))) => {
                self.waiting.fetch_sub(1, Ordering::SeqCst);
                Err(job)
            }
            Err(_) => unreachable!("an intent comes back as it was sent"),
        }
    }

    /// Hand an outcome to the writer; its answer. `Err(finish)` when the writer is gone.
    pub(crate) async fn finish(&self, finish: Finish) -> Result<Finished, Finish> {
        let (answer, answered) = oneshot::channel();
        self.waiting.fetch_add(1, Ordering::SeqCst);
        match self.queue.send(Work::RecordedOutcome(finish, answer)) {
            Ok(()) => Ok(answered.await.unwrap_or_else(|_| Err(stopped()))),
            Err(mpsc::error::SendError(Work::RecordedOutcome(finish, ..))) => {
                self.waiting.fetch_sub(1, Ordering::SeqCst);
                Err(finish)
            }
            Err(_) => unreachable!("an outcome comes back as it was sent"),
        }
    }

    /// End the writer's moment of gathering: what it holds is written at once.
    pub(crate) fn hurry(&self) {
        let _ = self.queue.send(Work::Hurry);
    }

    /// Gather outcomes nobody waits for this long from now on (the journal: [`LINGER`] or a
    /// tenth of its lease, the shorter; tests: a gathering longer than any test, so that only a
    /// hurry ends it).
    pub(crate) fn set_linger(&self, linger: std::time::Duration) {
        self.linger_us
            .store(linger.as_micros() as u64, Ordering::Relaxed);
    }

    /// Hand an outcome nobody waits for to the writer (its `done` set): it is written with the
    /// next group, and a failure or a lease lost is logged. `Err(finish)` when the writer is
    /// gone.
    pub(crate) fn finish_detached(&self, finish: Finish) -> Result<(), Finish> {
        let (answer, _) = oneshot::channel();
        self.waiting.fetch_add(1, Ordering::SeqCst);
        match self.queue.send(Work::RecordedOutcome(finish, answer)) {
            Ok(()) => Ok(()),
            Err(mpsc::error::SendError(Work::RecordedOutcome(finish, ..))) => {
                self.waiting.fetch_sub(1, Ordering::SeqCst);
                Err(finish)
            }
            Err(_) => unreachable!("an outcome comes back as it was sent"),
        }
    }

    /// Whether the caller runs on the writer task's runtime. A write nobody waits for is handed
    /// to the writer only then: a journal opened on another runtime, which may sit idle, would
    /// never write it, and every read waiting for it would wait forever.
    pub(crate) fn on_this_runtime(&self) -> bool {
        tokio::runtime::Handle::try_current().is_ok_and(|h| h.id() == self.runtime)
    }

    /// Requests handed to the writer task and not answered yet.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// How many groups of intents the writer task committed.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn groups(&self) -> u64 {
        self.groups.load(Ordering::SeqCst)
    }

    /// Tells whether the writer task still runs.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn watch(&self) -> Weak<()> {
        self.alive.clone()
    }
}

fn stopped() -> JournalError {
    JournalError::new(
        JournalErrorKind::Write,
        "the journal's writer stopped before it answered",
    )
}

fn failed(message: &str) -> JournalError {
    JournalError::new(JournalErrorKind::Write, message.to_owned())
}

/// The writer task's own.
struct Task {
    linger_us: Arc<AtomicU64>,
    pool: SqlitePool,
    relaxed: SqlitePool,
    now: &'static str,
    turn: Arc<Mutex<()>>,
    waiting: Arc<AtomicUsize>,
    groups: Arc<AtomicU64>,
    _alive: Arc<()>,
}

impl Task {
    /// Wait for a request, take the turn, take every request waiting (up to [`GROUP`] of each
    /// kind), write them (intents and outcomes in one transaction, outcomes alone on the
    /// relaxed connection), answer, give the turn back; until every handle is dropped.
    async fn run(self, mut work: mpsc::UnboundedReceiver<Work>) {
        let mut intents: Vec<(Job, oneshot::Sender<Inserted>)> = Vec::new();
        let mut outcomes: Vec<(Finish, oneshot::Sender<Finished>)> = Vec::new();
        // Requests taken and not yet written (beyond a full group, or gathered while lingering),
        // in the order they came.
        let mut held: std::collections::VecDeque<Work> = std::collections::VecDeque::new();
        loop {
            if held.is_empty() {
                match work.recv().await {
                    Some(w) => held.push_back(w),
                    None => return,
                }
            }
            // Only outcomes nobody waits for: gather more for a moment, without the turn (a
            // caller that finds the turn free meanwhile writes at once), until a full group,
            // or a request somebody waits for, comes.
            if held.iter().all(is_detached) {
                let linger =
                    std::time::Duration::from_micros(self.linger_us.load(Ordering::Relaxed));
                let until = tokio::time::Instant::now() + linger;
                while held.len() < GROUP {
                    match tokio::time::timeout_at(until, work.recv()).await {
                        Ok(Some(w)) => {
                            let lazy = is_detached(&w);
                            held.push_back(w);
                            if !lazy {
                                break;
                            }
                        }
                        Ok(None) | Err(_) => break,
                    }
                }
            }
            let _turn = self.turn.lock().await;
            loop {
                let w = match held.pop_front() {
                    Some(w) => w,
                    None => match work.try_recv() {
                        Ok(w) => w,
                        Err(_) => break,
                    },
                };
                match w {
                    Work::Intent(j, a) if intents.len() < GROUP => intents.push((j, a)),
                    Work::RecordedOutcome(o, a) if outcomes.len() < GROUP => outcomes.push((o, a)),
                    Work::Hurry => {}
                    full => {
                        held.push_front(full);
                        break;
                    }
                }
            }
            if intents.is_empty() {
                self.write_outcomes(&mut outcomes).await;
            } else {
                self.write_group(&mut intents, &mut outcomes).await;
            }
        }
    }

    /// Outcomes alone, on the relaxed connection: a group of [`COUNTED_FROM`] or more in a
    /// transaction of its own, counted; a smaller one in one statement, returned.
    async fn write_outcomes(&self, outcomes: &mut Vec<(Finish, oneshot::Sender<Finished>)>) {
        if outcomes.is_empty() {
            return;
        }
        let written = {
            let finishes: Vec<&Finish> = outcomes.iter().map(|(o, _)| o).collect();
            if finishes.len() >= COUNTED_FROM {
                write_together(&self.relaxed, self.now, &finishes, &[])
                    .await
                    .map(|(kept, _)| kept)
            } else {
                update_all(&self.relaxed, self.now, &finishes, true)
                    .await
                    .map(Option::unwrap_or_default)
            }
        };
        self.answer_outcomes(outcomes, written);
    }

    /// Intents, and the outcomes that came with them: one transaction on the synchronous
    /// connection, so that one commit (one fsync) writes both, and the outcomes are durable
    /// with the intents. When it fails, the outcomes are written on their own and the intents
    /// again on their own, so that neither fails for the other.
    async fn write_group(
        &self,
        intents: &mut Vec<(Job, oneshot::Sender<Inserted>)>,
        outcomes: &mut Vec<(Finish, oneshot::Sender<Finished>)>,
    ) {
        self.groups.fetch_add(1, Ordering::SeqCst);
        let together = if outcomes.is_empty() {
            None
        } else {
            let finishes: Vec<&Finish> = outcomes.iter().map(|(o, _)| o).collect();
            let jobs: Vec<&Job> = intents.iter().map(|(j, _)| j).collect();
            match write_together(&self.pool, self.now, &finishes, &jobs).await {
                Ok(written) => Some(written),
                Err(message) => {
                    tracing::debug!(%message, "a group of outcomes and intents failed together; writing each kind on its own");
                    None
                }
            }
        };
        let ids = match together {
            Some((kept, ids)) => {
                self.answer_outcomes(outcomes, Ok(kept));
                Ok(ids)
            }
            None => {
                self.write_outcomes(outcomes).await;
                let jobs: Vec<&Job> = intents.iter().map(|(j, _)| j).collect();
                insert_all(&self.pool, &jobs).await
            }
        };
        match ids {
            Ok(ids) => {
                for ((job, answer), id) in intents.drain(..).zip(ids) {
                    let token = job.token;
                    let _ = answer.send(Ok(id.map(|id| Lease { id, token })));
                    self.waiting.fetch_sub(1, Ordering::SeqCst);
                }
            }
            Err(message) => {
                for (_, answer) in intents.drain(..) {
                    let _ = answer.send(Err(failed(&message)));
                    self.waiting.fetch_sub(1, Ordering::SeqCst);
                }
            }
        }
    }

    fn answer_outcomes(
        &self,
        outcomes: &mut Vec<(Finish, oneshot::Sender<Finished>)>,
        written: Result<Vec<(i64, i64)>, String>,
    ) {
        for (o, answer) in outcomes.drain(..) {
            let kept = match &written {
                Ok(kept) => Ok(kept.contains(&(o.lease.id, o.lease.token))),
                Err(message) => Err(failed(message)),
            };
            if o.done.is_some() {
                // Nobody waits: say here what the caller would have logged.
                match &kept {
                    Ok(true) => {}
                    Ok(false) => tracing::warn!(
                        entry = o.lease.id,
                        "the journal lease was taken over before the outcome was recorded; the entry stays as the other process leaves it"
                    ),
                    Err(e) => tracing::warn!(
                        entry = o.lease.id,
                        error = %e,
                        "the journal could not record an outcome; recover() will read it again"
                    ),
                }
            }
            let _ = answer.send(kept);
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            // `o.done`, if set, is given up here: the write is over.
            drop(o);
        }
    }
}

/// The fewest outcomes written alone that are counted rather than returned (see `update_all`):
/// counting needs a transaction of its own, two more statements, which a group of a few
/// outcomes saves less than it costs.
const COUNTED_FROM: usize = 8;

/// Outcomes and intents (or outcomes alone) in one transaction, committed once; the outcomes
/// counted, and returned only when some lease was lost (see `update_all`).
async fn write_together(
    pool: &SqlitePool,
    now: &str,
    finishes: &[&Finish],
    jobs: &[&Job],
) -> Result<(Vec<(i64, i64)>, Vec<Option<i64>>), String> {
    // A connection whose transaction failed is closed, never reused (see `store`).
    crate::store::closed_on_failure(
        pool,
        |e| e.to_string(),
        async |conn| {
            let mut tx = sqlx::Connection::begin(&mut *conn)
                .await
                .map_err(|e| e.to_string())?;
            let kept = match update_all(&mut *tx, now, finishes, false).await? {
                Some(kept) => kept,
                None => {
                    // Some lease was lost: undo the statement (nothing else is in the
                    // transaction yet) and write again, told which rows were written.
                    tx.rollback().await.map_err(|e| e.to_string())?;
                    tx = sqlx::Connection::begin(&mut *conn)
                        .await
                        .map_err(|e| e.to_string())?;
                    update_all(&mut *tx, now, finishes, true)
                        .await?
                        .unwrap_or_default()
                }
            };
            let ids = if jobs.is_empty() {
                Vec::new()
            } else {
                insert_all(&mut *tx, jobs).await?
            };
            tx.commit().await.map_err(|e| {
                format!(
                    "the group commit of {} intent(s) and {} outcome(s) failed: {e}",
                    jobs.len(),
                    finishes.len()
                )
            })?;
            Ok((kept, ids))
        },
    )
    .await
}

/// Insert every intent with one statement (its own transaction, one commit); the row id of each
/// (None: its key was recorded already, or by an earlier intent of the same group).
async fn insert_all<'c>(
    pool: impl sqlx::SqliteExecutor<'c>,
    jobs: &[&Job],
) -> Result<Vec<Option<i64>>, String> {
    // The lease clock is read when the statement runs (see `Db::lease_now`): its offset last.
    let sql = crate::store::insert_many_sql(crate::Backend::Sqlite, jobs.len());
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
    let mut same: [crate::store::SameText; 4] = Default::default();
    for job in jobs {
        q = q
            .bind(same[0].of(job.service))
            .bind(same[1].of(job.operation))
            .bind(job.key.as_str())
            .bind(job.context.as_deref())
            .bind(job.body.as_slice())
            .bind(same[2].of(&job.owner))
            .bind(job.lease_ms)
            .bind(job.token)
            .bind(same[3].of(&job.target));
    }
    let rows = q
        .bind(crate::store::lease_clock_offset_ms())
        .fetch_all(pool)
        .await
        .map_err(|e| format!("the group commit of {} intent(s) failed: {e}", jobs.len()))?;
    let mut inserted = std::collections::HashMap::new();
    for r in &rows {
        let get = |c: &str| r.try_get::<String, _>(c).map_err(|e| e.to_string());
        let id = r.try_get::<i64, _>("id").map_err(|e| e.to_string())?;
        inserted.insert((get("service")?, get("operation")?, get("idem_key")?), id);
    }
    // The first intent of a key gets its row; a second one of the same key in the group finds
    // it taken (None), as it would have found it recorded one statement later.
    Ok(jobs
        .iter()
        .map(|j| inserted.remove(&(j.service.to_owned(), j.operation.to_owned(), j.key.clone())))
        .collect())
}

/// Record every outcome with one statement, each only under its own lease (row id and fencing
/// token); the (id, token) of each written, or `None` when not every one was (nothing is
/// returned row by row then: the caller rolls the statement back and asks again with
/// `returning`, to learn which).
///
/// Every outcome's lease is still its writer's in nearly every group: the statement then says
/// how many rows it changed, and as many as the group has means each was written (each names
/// one row by its id, and a row changed twice in one statement counts once). Only a group in
/// which some lease was lost pays for the rows of `RETURNING`, each a row handed back from
/// SQLite's thread.
async fn update_all<'c>(
    pool: impl sqlx::SqliteExecutor<'c>,
    now: &str,
    finishes: &[&Finish],
    returning: bool,
) -> Result<Option<Vec<(i64, i64)>>, String> {
    // Anonymous parameters, in order (see `insert_many_sql`), padded to a power of two (see
    // `padded_len`) with rows that match no entry (row id 0: ids start at 1).
    let padded = crate::store::padded_len(finishes.len());
    // `finish` leaves the token as it is, so the row's token after the update is the one that
    // matched: two outcomes of one entry under two tokens in a group are told apart by it.
    let name = if returning {
        "write outcomes, returning"
    } else {
        "write outcomes"
    };
    let sql = crate::store::statement_text(name, crate::Backend::Sqlite, padded, || {
        format!(
            "WITH v(id, owner, token, state, outcome, refs) AS (VALUES {}) \
             UPDATE whish_journal_entries \
             SET state = v.state, outcome = v.outcome, refs = v.refs, updated_ms = {now}, \
                 lease_owner = NULL, lease_until_ms = NULL \
             FROM v WHERE whish_journal_entries.id = v.id \
               AND whish_journal_entries.lease_owner = v.owner \
               AND whish_journal_entries.lease_token = v.token{}",
            vec!["(?, ?, ?, ?, ?, ?)"; padded].join(", "),
            if returning {
                " RETURNING whish_journal_entries.id, whish_journal_entries.lease_token"
            } else {
                ""
            }
        )
    });
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
    let (mut owner, mut state) = (
        crate::store::SameText::default(),
        crate::store::SameText::default(),
    );
    for f in finishes {
        q = q
            .bind(f.lease.id)
            .bind(owner.of(&f.owner))
            .bind(f.lease.token)
            .bind(state.of(f.state))
            .bind(f.outcome.as_str())
            .bind(f.refs.as_str());
    }
    let empty: std::sync::Arc<str> = std::sync::Arc::from("");
    for _ in finishes.len()..padded {
        q = q
            .bind(0_i64)
            .bind(empty.clone())
            .bind(-1_i64)
            .bind(empty.clone())
            .bind(empty.clone())
            .bind(empty.clone());
    }
    let failed = |e: sqlx::Error| {
        format!(
            "the group write of {} outcome(s) failed: {e}",
            finishes.len()
        )
    };
    if !returning {
        let changed = q.execute(pool).await.map_err(failed)?.rows_affected();
        return Ok((changed == finishes.len() as u64).then(|| {
            finishes
                .iter()
                .map(|f| (f.lease.id, f.lease.token))
                .collect()
        }));
    }
    let rows = q.fetch_all(pool).await.map_err(failed)?;
    rows.iter()
        .map(|r| {
            Ok((
                r.try_get::<i64, _>(0).map_err(|e| e.to_string())?,
                r.try_get::<i64, _>(1).map_err(|e| e.to_string())?,
            ))
        })
        .collect::<Result<_, String>>()
        .map(Some)
}

#[cfg(test)]
mod tests {
    //! The writer on a real SQLite file: requests queued while the turn is held go in one group.

    use std::time::Duration;

    use super::*;
    use crate::entry::{Operation, RecordedOutcome, References, Service, State};
    use crate::store::Db;
    use crate::store::Request;

    async fn journal(test: &str) -> Db {
        let dir =
            std::env::temp_dir().join(format!("whish-journal-{test}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        Db::open_sqlite(&dir.join("journal.sqlite"), false)
            .await
            .expect("open")
    }

    /// Wait until `n` requests wait for the writer (they queue while the test holds the turn).
    async fn queued(db: &Db, n: usize) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while db.writer().waiting() < n {
            assert!(
                std::time::Instant::now() < deadline,
                "{} of {n} requests queued",
                db.writer().waiting()
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// The outcome `state` recorded under `lease`, as "me", in a task of its own.
    fn spawn_finish(
        db: &Db,
        lease: Lease,
        state: State,
    ) -> tokio::task::JoinHandle<Result<bool, JournalError>> {
        let db = db.clone();
        tokio::spawn(async move {
            db.finish(
                lease,
                "me",
                state,
                &RecordedOutcome::new(state.as_str()),
                &References::default(),
            )
            .await
        })
    }

    fn spawn_insert(
        db: &Db,
        key: String,
    ) -> tokio::task::JoinHandle<Result<Option<Lease>, JournalError>> {
        let db = db.clone();
        tokio::spawn(async move {
            let body = format!("{{\"key\":\"{key}\"}}");
            let request = Request {
                service: Service::MoneyTransfer,
                operation: Operation::Send,
                key: &key,
                context: None,
                body: body.as_bytes(),
                target: "test",
            };
            db.insert(&request, "me", 30_000, crate::store::insert_token())
                .await
        })
    }

    async fn row_id(db: &Db, key: &str) -> Option<i64> {
        sqlx::query_scalar("SELECT id FROM whish_journal_entries WHERE idem_key = $1")
            .bind(key)
            .fetch_optional(db.sqlite_pool())
            .await
            .expect("read")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_group_answers_each_intent_with_its_own_lease() {
        let db = journal("group-leases").await;
        let turn = db.writer().turn().await;
        let before = db.writer().groups();
        let keys: Vec<String> = (0..GROUP + 6).map(|i| format!("key-{i}")).collect();
        let tasks: Vec<_> = keys.iter().map(|k| spawn_insert(&db, k.clone())).collect();
        queued(&db, keys.len()).await;
        drop(turn);
        let mut ids = Vec::new();
        for (key, task) in keys.iter().zip(tasks) {
            let lease = task.await.expect("join").expect("inserted").expect("new");
            assert!(lease.token > 1, "{key}: a token drawn for its insert");
            assert_eq!(row_id(&db, key).await, Some(lease.id), "{key}: its own row");
            ids.push(lease.id);
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), keys.len());
        // 70 intents: one full group and the rest in a second.
        assert_eq!(db.writer().groups() - before, 2);
        db.close().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_intents_of_one_key_in_a_group_exactly_one_wins() {
        let db = journal("group-duplicates").await;
        // A key recorded before the group, too: neither of its intents in the group wins.
        let old = spawn_insert(&db, "old".into()).await.expect("join");
        let old = old.expect("inserted").expect("new");
        let turn = db.writer().turn().await;
        let before = db.writer().groups();
        let keys = ["a", "dup", "b", "dup", "old", "c", "old", "dup"];
        let tasks: Vec<_> = keys
            .iter()
            .map(|k| spawn_insert(&db, (*k).to_owned()))
            .collect();
        queued(&db, keys.len()).await;
        drop(turn);
        let mut answers = Vec::new();
        for task in tasks {
            answers.push(task.await.expect("join").expect("inserted"));
        }
        assert_eq!(db.writer().groups() - before, 1, "one group");
        for key in ["a", "b", "c"] {
            let i = keys.iter().position(|k| *k == key).expect("key");
            assert_eq!(answers[i].map(|l| l.id), row_id(&db, key).await, "{key}");
        }
        let dup: Vec<_> = keys
            .iter()
            .zip(&answers)
            .filter(|(k, _)| **k == "dup")
            .map(|(_, a)| *a)
            .collect();
        let winners: Vec<_> = dup.iter().flatten().collect();
        assert_eq!(winners.len(), 1, "exactly one wins: {dup:?}");
        assert_eq!(Some(winners[0].id), row_id(&db, "dup").await);
        // The row written is the winner's own (each insert draws its own token).
        let token: i64 = sqlx::query_scalar(
            "SELECT lease_token FROM whish_journal_entries WHERE idem_key = 'dup'",
        )
        .fetch_one(db.sqlite_pool())
        .await
        .expect("read");
        assert_eq!(
            token, winners[0].token,
            "the winner's intent is the one written"
        );
        let olds: Vec<_> = keys
            .iter()
            .zip(&answers)
            .filter(|(k, _)| **k == "old")
            .map(|(_, a)| *a)
            .collect();
        assert_eq!(olds, [None, None], "recorded before: none wins");
        assert_eq!(row_id(&db, "old").await, Some(old.id));
        db.close().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_group_that_fails_answers_every_intent_with_the_error_and_writes_none() {
        let db = journal("group-fails").await;
        sqlx::raw_sql(
            "CREATE TRIGGER whish_test_fail BEFORE INSERT ON whish_journal_entries \
             WHEN NEW.idem_key = 'poison' BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END",
        )
        .execute(db.sqlite_pool())
        .await
        .expect("trigger");
        let turn = db.writer().turn().await;
        let keys = ["a", "b", "poison", "c"];
        let tasks: Vec<_> = keys
            .iter()
            .map(|k| spawn_insert(&db, (*k).to_owned()))
            .collect();
        queued(&db, keys.len()).await;
        drop(turn);
        for (key, task) in keys.iter().zip(tasks) {
            let e = task.await.expect("join").expect_err("the group failed");
            assert!(e.to_string().contains("disk I/O error"), "{key}: {e}");
            assert_eq!(row_id(&db, key).await, None, "{key}: nothing written");
        }
        // The next group (without the poison) commits.
        let lease = spawn_insert(&db, "d".into()).await.expect("join");
        assert!(lease.expect("inserted").is_some());
        db.close().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caller_that_goes_away_leaves_the_group_whole() {
        let db = journal("group-dropped").await;
        let turn = db.writer().turn().await;
        let keys: Vec<String> = (0..10).map(|i| format!("key-{i}")).collect();
        let tasks: Vec<_> = keys.iter().map(|k| spawn_insert(&db, k.clone())).collect();
        queued(&db, keys.len()).await;
        let mut kept = Vec::new();
        for (i, task) in tasks.into_iter().enumerate() {
            if i % 3 == 0 {
                task.abort();
            } else {
                kept.push((i, task));
            }
        }
        drop(turn);
        for (i, task) in kept {
            let lease = task.await.expect("join").expect("inserted").expect("new");
            assert_eq!(row_id(&db, &keys[i]).await, Some(lease.id));
        }
        // The intents of the callers that went away were written too, as a crash would leave
        // them: open, for recovery.
        for i in (0..10).step_by(3) {
            assert!(row_id(&db, &keys[i]).await.is_some(), "key-{i}");
        }
        assert_eq!(db.writer().waiting(), 0);
        db.close().await;
    }

    /// Two outcomes of one entry in a group, under the stale token and the current one: only
    /// the current one is written, and the stale one is told its lease was lost.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn outcomes_in_a_group_are_fenced_by_their_own_token() {
        let db = journal("group-fencing").await;
        let first = spawn_insert(&db, "k".into()).await.expect("join");
        let first = first.expect("inserted").expect("new");
        let second = db
            .take_lease(first.id, "me", 30_000)
            .await
            .expect("take")
            .expect("taken");
        assert_eq!(second.token, first.token + 1);
        let other = spawn_insert(&db, "other".into()).await.expect("join");
        let other = other.expect("inserted").expect("new");
        let turn = db.writer().turn().await;
        let stale = spawn_finish(&db, first, State::Refused);
        let current = spawn_finish(&db, second, State::Accepted);
        let elsewhere = spawn_finish(&db, other, State::Accepted);
        queued(&db, 3).await;
        drop(turn);
        assert!(!stale.await.expect("join").expect("written"), "stale token");
        assert!(
            current.await.expect("join").expect("written"),
            "current token"
        );
        assert!(elsewhere.await.expect("join").expect("written"));
        let state: String =
            sqlx::query_scalar("SELECT state FROM whish_journal_entries WHERE id = $1")
                .bind(first.id)
                .fetch_one(db.sqlite_pool())
                .await
                .expect("read");
        assert_eq!(state, "accepted");
        db.close().await;
    }

    /// Whatever the size of a group, and whether intents come with it, an outcome under a stale
    /// token is told its lease was lost and every other one is written: a group in which every
    /// lease held is counted, and one in which a lease was lost is asked again row by row.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_outcome_of_a_group_is_told_whether_it_was_written_at_any_size() {
        for (n, with_intent, stale) in [
            (3, false, true),
            (COUNTED_FROM + 4, false, false),
            (COUNTED_FROM + 4, false, true),
            (COUNTED_FROM + 4, true, false),
            (COUNTED_FROM + 4, true, true),
        ] {
            let case = format!("{n} outcomes, an intent: {with_intent}, a stale token: {stale}");
            let db = journal("group-counted").await;
            let mut leases = Vec::new();
            for i in 0..n {
                let inserted = spawn_insert(&db, format!("k{i}")).await.expect("join");
                leases.push(inserted.expect("inserted").expect("new"));
            }
            // The first entry's lease taken again: its first token is stale.
            let current = if stale {
                Some(
                    db.take_lease(leases[0].id, "me", 30_000)
                        .await
                        .expect("take")
                        .expect("taken"),
                )
            } else {
                None
            };
            let turn = db.writer().turn().await;
            let finish = |lease: Lease| spawn_finish(&db, lease, State::Accepted);
            let mut answers: Vec<(bool, _)> = leases
                .iter()
                .enumerate()
                .map(|(i, l)| (!(stale && i == 0), finish(*l)))
                .collect();
            answers.extend(current.map(|c| (true, finish(c))));
            let intent = with_intent.then(|| spawn_insert(&db, "new".into()));
            queued(&db, answers.len() + usize::from(with_intent)).await;
            drop(turn);
            for (i, (expected, answer)) in answers.into_iter().enumerate() {
                let written = answer.await.expect("join").expect("answered");
                assert_eq!(written, expected, "{case}: outcome {i}");
            }
            if let Some(intent) = intent {
                let lease = intent.await.expect("join").expect("inserted");
                assert!(lease.is_some(), "{case}: the intent");
            }
            let accepted: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM whish_journal_entries WHERE state = 'accepted'",
            )
            .fetch_one(db.sqlite_pool())
            .await
            .expect("read");
            assert_eq!(accepted, n as i64, "{case}");
            db.close().await;
        }
    }

    /// An outcome nobody waited for is gathered with others for a moment; once somebody waits
    /// for it (a flush, a read), it is written at once, not after the gathering.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_outcome_waited_for_is_written_without_waiting_out_the_gathering() {
        let db = journal("group-hurry").await;
        db.writer().set_linger(Duration::from_secs(3600));
        let lease = spawn_insert(&db, "k".into()).await.expect("join");
        let lease = lease.expect("inserted").expect("new");
        let background = Arc::new(crate::background::Background::default());
        let handed = db.finish_later(
            lease,
            "me",
            State::Accepted,
            &RecordedOutcome::new("accepted"),
            &References::default(),
            background.begin(),
        );
        assert!(handed.is_ok(), "handed to the writer");
        let state = async || -> String {
            sqlx::query_scalar("SELECT state FROM whish_journal_entries WHERE id = $1")
                .bind(lease.id)
                .fetch_one(db.sqlite_pool())
                .await
                .expect("read")
        };
        queued(&db, 1).await;
        assert_eq!(background.len(), 1, "still being gathered");
        assert_eq!(state().await, "intended");
        db.hurry();
        tokio::time::timeout(Duration::from_secs(30), background.wait())
            .await
            .expect("written at once, not after an hour of gathering");
        assert_eq!(state().await, "accepted");
        db.close().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_writer_task_ends_with_the_journal() {
        let db = journal("group-ends").await;
        let lease = spawn_insert(&db, "k".into()).await.expect("join");
        assert!(lease.expect("inserted").is_some());
        let watch = db.writer().watch();
        assert!(watch.strong_count() > 0, "running");
        db.close().await;
        // Closed, not dropped: the task waits, and an intent now is an error, not a hang.
        let after = spawn_insert(&db, "late".into()).await.expect("join");
        assert!(after.is_err(), "{after:?}");
        drop(db);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while watch.strong_count() > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the writer task still runs"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Outcomes nobody waits for are gathered for [`LINGER`], or a tenth of the journal's lease
    /// when that is shorter: the gathering never takes a lease's worth of time.
    #[tokio::test]
    async fn outcomes_are_gathered_for_at_most_a_tenth_of_the_lease() {
        let gathered = async |lease: Duration| {
            let dir =
                std::env::temp_dir().join(format!("whish-journal-linger-{}", uuid::Uuid::new_v4()));
            let journal =
                crate::Journal::builder(format!("sqlite:{}", dir.join("j.sqlite").display()))
                    .lease(lease)
                    .open()
                    .await
                    .expect("open");
            let us = journal.inner.db.writer().linger_us.load(Ordering::Relaxed);
            journal.close().await;
            let _ = std::fs::remove_dir_all(&dir);
            Duration::from_micros(us)
        };
        assert_eq!(gathered(crate::DEFAULT_LEASE).await, LINGER);
        assert_eq!(
            gathered(Duration::from_millis(50)).await,
            Duration::from_millis(5)
        );
    }
}
