//! Group commit for SQLite: the intents of concurrent sends share one durable commit.
//!
//! SQLite has one writer, and every commit in `synchronous = FULL` waits for its fsync: sixteen
//! sends starting at once queued sixteen fsyncs, one after the other. Here one task takes every
//! intent waiting (up to [`GROUP`]), inserts them in one transaction and commits once, then
//! answers each. An intent alone is inserted at once, as before: nothing waits for a timer, so a
//! single send pays no added latency.
//!
//! Failure is all or nothing: when the group's transaction cannot commit, every intent in it is
//! answered with the error, and each caller records its request as never sent (the journal's
//! `abandon`), exactly as when its own insert failed. (PostgreSQL needs none of this: concurrent
//! commits on its connections already share a WAL flush.)

use sqlx::Row;
use sqlx::sqlite::SqlitePool;
use tokio::sync::{mpsc, oneshot};

use crate::error::{JournalError, JournalErrorKind};
use crate::store::Lease;

/// The most intents one commit carries.
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

/// The handle of the writer task; cheap to clone. The task ends when every handle is dropped.
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    jobs: mpsc::UnboundedSender<Job>,
}

impl Writer {
    /// Start the writer on `pool` (the synchronous pool), inserting with `sql`.
    pub(crate) fn start(pool: SqlitePool, sql: String) -> Writer {
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(run(pool, sql, queue));
        Writer { jobs }
    }

    /// Hand an intent to the writer. False when the writer is gone (its runtime ended): the
    /// caller inserts it itself.
    pub(crate) fn submit(&self, job: Job) -> bool {
        self.jobs.send(job).is_ok()
    }
}

async fn run(pool: SqlitePool, sql: String, mut queue: mpsc::UnboundedReceiver<Job>) {
    while let Some(first) = queue.recv().await {
        let mut jobs = vec![first];
        while jobs.len() < GROUP {
            match queue.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        // A caller that went away (its future dropped) still has its intent committed, as its
        // own insert would have been: recovery then finds it, as after a crash.
        match commit(&pool, &sql, &jobs).await {
            Ok(ids) => {
                for (job, id) in jobs.into_iter().zip(ids) {
                    let _ = job.answer.send(Ok(id.map(|id| Lease { id, token: 1 })));
                }
            }
            Err(message) => {
                for job in jobs {
                    let _ = job.answer.send(Err(JournalError::new(
                        JournalErrorKind::Write,
                        message.clone(),
                    )));
                }
            }
        }
    }
}

fn bind<'q>(
    sql: &'q str,
    job: &'q Job,
) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments> {
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(job.service)
        .bind(job.operation)
        .bind(job.key.as_str())
        .bind(job.context.as_deref())
        .bind(job.body.as_slice())
        .bind(job.owner.as_str())
        .bind(job.lease_ms)
}

/// Insert every job in one transaction; the row id of each (None: its key was there already).
async fn commit(pool: &SqlitePool, sql: &str, jobs: &[Job]) -> Result<Vec<Option<i64>>, String> {
    let id_of = |row: Option<sqlx::sqlite::SqliteRow>| {
        row.map(|r| r.try_get::<i64, _>("id"))
            .transpose()
            .map_err(|e| e.to_string())
    };
    if let [job] = jobs {
        // Alone: one statement, its own commit, as without the writer.
        let row = bind(sql, job)
            .fetch_optional(pool)
            .await
            .map_err(|e| e.to_string())?;
        return Ok(vec![id_of(row)?]);
    }
    let mut conn = pool.acquire().await.map_err(|e| e.to_string())?;
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut *conn)
        .await
        .map_err(|e| e.to_string())?;
    let mut ids = Vec::with_capacity(jobs.len());
    for job in jobs {
        let id = match bind(sql, job).fetch_optional(&mut *conn).await {
            Ok(row) => id_of(row),
            Err(e) => Err(e.to_string()),
        };
        match id {
            Ok(id) => ids.push(id),
            Err(e) => {
                // Never hand the connection back inside an open transaction.
                let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
                return Err(e);
            }
        }
    }
    if let Err(e) = sqlx::query("COMMIT").execute(&mut *conn).await {
        let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
        return Err(format!(
            "the group commit of {} intents failed: {e}",
            jobs.len()
        ));
    }
    Ok(ids)
}
