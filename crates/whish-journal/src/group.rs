//! Group commit for SQLite: the intents of concurrent sends share one durable commit, and their
//! outcomes one relaxed commit.
//!
//! SQLite has one writer, and every commit in `synchronous = FULL` waits for its fsync: sixteen
//! sends starting at once queued sixteen fsyncs, one after the other. Here one task takes every
//! intent waiting (up to [`GROUP`]), inserts them with one statement in one transaction and
//! commits once, then answers each; a second task does the same for the outcomes (one `UPDATE`
//! for the group, on the relaxed connection). An intent or an outcome alone is written at once:
//! nothing waits for a timer, so a single send pays no added latency.
//!
//! Failure is all or nothing: when a group's statement or commit fails, every request in it is
//! answered with the error. An intent's caller then records its request as never sent (the
//! journal's `abandon`), exactly as when its own insert failed; an outcome's caller leaves its
//! entry open for recovery, exactly as when its own update failed. (PostgreSQL needs none of
//! this: concurrent commits on its connections already share a WAL flush.)

use std::collections::HashMap;

use sqlx::Row;
use sqlx::sqlite::SqlitePool;
use tokio::sync::{mpsc, oneshot};

use crate::error::{JournalError, JournalErrorKind};
use crate::store::Lease;

/// The most requests one statement carries.
pub(crate) const GROUP: usize = 64;

/// One intent to insert, with where its answer goes.
pub(crate) struct Job {
    pub service: &'static str,
    pub operation: &'static str,
    pub key: String,
    pub context: Option<String>,
    pub body: Vec<u8>,
    pub owner: String,
    pub lease_ms: i64,
    pub answer: oneshot::Sender<Result<Option<Lease>, JournalError>>,
}

/// One outcome to record under a lease, with where its answer goes (false: the lease was no
/// longer the caller's, nothing written).
pub(crate) struct Finish {
    pub lease: Lease,
    pub owner: String,
    pub state: &'static str,
    pub outcome: String,
    pub refs: String,
    pub answer: oneshot::Sender<Result<bool, JournalError>>,
}

/// The handles of the two writer tasks; cheap to clone. The tasks end when every handle is
/// dropped.
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    jobs: mpsc::UnboundedSender<Job>,
    finishes: mpsc::UnboundedSender<Finish>,
    /// Intents being written now (by the writer, or by a caller alone).
    busy: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

/// An intent written by its caller itself, counted while it is under way.
pub(crate) struct Alone(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Alone {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Writer {
    /// Start the writers: intents on `pool` (the synchronous pool), outcomes on `relaxed`; `now`
    /// is the database clock's SQL.
    pub(crate) fn start(pool: SqlitePool, relaxed: SqlitePool, now: &'static str) -> Writer {
        let busy = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(run_intents(pool, now, queue, busy.clone()));
        let (finishes, queue) = mpsc::unbounded_channel();
        tokio::spawn(run_finishes(relaxed, now, queue));
        Writer {
            jobs,
            finishes,
            busy,
        }
    }

    /// When no other intent is being written, the caller writes its own at once (no hop through
    /// the writer task: a lone send's latency stays that of one insert); the guard counts it
    /// while it is under way, so intents that come meanwhile are grouped by the writer.
    pub(crate) fn alone(&self) -> Option<Alone> {
        use std::sync::atomic::Ordering;
        self.busy
            .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
            .ok()
            .map(|_| Alone(self.busy.clone()))
    }

    /// Hand an intent to the writer. False when the writer is gone (its runtime ended): the
    /// caller inserts it itself.
    pub(crate) fn submit(&self, job: Job) -> bool {
        self.busy.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        match self.jobs.send(job) {
            Ok(()) => true,
            Err(_) => {
                self.busy.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                false
            }
        }
    }

    /// Hand an outcome to the writer. False when the writer is gone: the caller writes it.
    pub(crate) fn finish(&self, finish: Finish) -> bool {
        self.finishes.send(finish).is_ok()
    }
}

/// Every request waiting, up to [`GROUP`], after the first.
async fn next_group<T>(queue: &mut mpsc::UnboundedReceiver<T>) -> Option<Vec<T>> {
    let first = queue.recv().await?;
    let mut group = vec![first];
    while group.len() < GROUP {
        match queue.try_recv() {
            Ok(job) => group.push(job),
            Err(_) => break,
        }
    }
    Some(group)
}

fn failed(message: &str) -> JournalError {
    JournalError::new(JournalErrorKind::Write, message.to_owned())
}

async fn run_intents(
    pool: SqlitePool,
    now: &'static str,
    mut queue: mpsc::UnboundedReceiver<Job>,
    busy: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    while let Some(jobs) = next_group(&mut queue).await {
        let n = jobs.len();
        // A caller that went away (its future dropped) still has its intent committed, as its
        // own insert would have been: recovery then finds it, as after a crash.
        match insert_all(&pool, now, &jobs).await {
            Ok(ids) => {
                for (job, id) in jobs.into_iter().zip(ids) {
                    let _ = job.answer.send(Ok(id.map(|id| Lease { id, token: 1 })));
                }
            }
            Err(message) => {
                for job in jobs {
                    let _ = job.answer.send(Err(failed(&message)));
                }
            }
        }
        busy.fetch_sub(n, std::sync::atomic::Ordering::SeqCst);
    }
}

async fn run_finishes(
    pool: SqlitePool,
    now: &'static str,
    mut queue: mpsc::UnboundedReceiver<Finish>,
) {
    while let Some(finishes) = next_group(&mut queue).await {
        match update_all(&pool, now, &finishes).await {
            Ok(done) => {
                for f in finishes {
                    let kept = done.contains(&f.lease.id);
                    let _ = f.answer.send(Ok(kept));
                }
            }
            Err(message) => {
                for f in finishes {
                    let _ = f.answer.send(Err(failed(&message)));
                }
            }
        }
    }
}

/// Insert every intent with one statement (its own transaction, one commit); the row id of each
/// (None: its key was recorded already, or by an earlier intent of the same group).
async fn insert_all(
    pool: &SqlitePool,
    now: &str,
    jobs: &[Job],
) -> Result<Vec<Option<i64>>, String> {
    let values: Vec<String> = (0..jobs.len())
        .map(|i| {
            let p = i * 7;
            format!(
                "(${}, ${}, ${}, ${}, ${}, 'intended', 1, {now}, {now}, ${}, {now} + ${}, 1)",
                p + 1,
                p + 2,
                p + 3,
                p + 4,
                p + 5,
                p + 6,
                p + 7
            )
        })
        .collect();
    let sql = format!(
        "INSERT INTO whish_journal_entries \
         (service, operation, idem_key, context, request, state, attempts, created_ms, \
          updated_ms, lease_owner, lease_until_ms, lease_token) VALUES {} \
         ON CONFLICT (service, operation, idem_key) DO NOTHING \
         RETURNING id, service, operation, idem_key",
        values.join(", ")
    );
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
    for job in jobs {
        q = q
            .bind(job.service)
            .bind(job.operation)
            .bind(job.key.as_str())
            .bind(job.context.as_deref())
            .bind(job.body.as_slice())
            .bind(job.owner.as_str())
            .bind(job.lease_ms);
    }
    let rows = q
        .fetch_all(pool)
        .await
        .map_err(|e| format!("the group commit of {} intent(s) failed: {e}", jobs.len()))?;
    let mut inserted: HashMap<(String, String, String), i64> = HashMap::new();
    for r in &rows {
        let get = |c: &str| r.try_get::<String, _>(c).map_err(|e| e.to_string());
        let id = r.try_get::<i64, _>("id").map_err(|e| e.to_string())?;
        inserted.insert((get("service")?, get("operation")?, get("idem_key")?), id);
    }
    // The first intent of a key gets its row; a second one of the same key found it there.
    Ok(jobs
        .iter()
        .map(|j| inserted.remove(&(j.service.to_owned(), j.operation.to_owned(), j.key.clone())))
        .collect())
}

/// Record every outcome with one statement, each only under its own lease; the ids written.
async fn update_all(pool: &SqlitePool, now: &str, finishes: &[Finish]) -> Result<Vec<i64>, String> {
    let values: Vec<String> = (0..finishes.len())
        .map(|i| {
            let p = i * 6;
            format!(
                "(${}, ${}, ${}, ${}, ${}, ${})",
                p + 1,
                p + 2,
                p + 3,
                p + 4,
                p + 5,
                p + 6
            )
        })
        .collect();
    let sql = format!(
        "WITH v(id, owner, token, state, outcome, refs) AS (VALUES {}) \
         UPDATE whish_journal_entries \
         SET state = v.state, outcome = v.outcome, refs = v.refs, updated_ms = {now}, \
             lease_owner = NULL, lease_until_ms = NULL \
         FROM v WHERE whish_journal_entries.id = v.id \
           AND whish_journal_entries.lease_owner = v.owner \
           AND whish_journal_entries.lease_token = v.token \
         RETURNING whish_journal_entries.id",
        values.join(", ")
    );
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
    for f in finishes {
        q = q
            .bind(f.lease.id)
            .bind(f.owner.as_str())
            .bind(f.lease.token)
            .bind(f.state)
            .bind(f.outcome.as_str())
            .bind(f.refs.as_str());
    }
    let rows = q.fetch_all(pool).await.map_err(|e| {
        format!(
            "the group write of {} outcome(s) failed: {e}",
            finishes.len()
        )
    })?;
    rows.iter()
        .map(|r| r.try_get::<i64, _>(0).map_err(|e| e.to_string()))
        .collect()
}
