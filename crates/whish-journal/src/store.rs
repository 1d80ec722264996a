//! The two backends behind one set of statements. The SQL is written once: both SQLite and
//! PostgreSQL read `$1`-style parameters, `ON CONFLICT` and `RETURNING`; only the row lease of
//! a recovery differs (`FOR UPDATE SKIP LOCKED` on PostgreSQL; SQLite has one writer).

use std::borrow::Cow;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Row, SqlSafeStr};
use time::OffsetDateTime;

use crate::entry::{Entry, Operation, Outcome, References, Service, State};
use crate::error::JournalError;
use crate::journaled::Request;

/// Which database holds the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    /// An embedded SQLite file (WAL, synchronous writes).
    Sqlite,
    /// A PostgreSQL server shared by several processes.
    Postgres,
}

#[derive(Debug, Clone)]
pub(crate) enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Run the same statement on whichever pool holds the journal.
macro_rules! on_db {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            Db::Sqlite($pool) => $body,
            Db::Postgres($pool) => $body,
        }
    };
}

/// The table that records which of the journal's migrations ran. Its own name, so that a
/// PostgreSQL database shared with the application's own sqlx migrations keeps them apart.
const MIGRATIONS_TABLE: &str = "whish_journal_migrations";

fn migrator(sql: &'static str) -> Migrator {
    let mut m = Migrator::with_migrations(vec![Migration::new(
        1,
        Cow::Borrowed("entries"),
        MigrationType::Simple,
        sql.into_sql_str(),
        false,
    )]);
    m.dangerous_set_table_name(MIGRATIONS_TABLE);
    m
}

/// The SQLite migrations, in order; `PRAGMA user_version` records how many ran.
const SQLITE_MIGRATIONS: &[&str] = &[include_str!("../migrations/sqlite/0001_entries.sql")];

/// Bring a SQLite journal up to date under `BEGIN IMMEDIATE`, the database's write lock: two
/// processes opening a new file at once run the migrations once (sqlx's migrator takes no lock
/// on SQLite, and the second process failed with "table already exists"; CI found it).
async fn migrate_sqlite(pool: &SqlitePool) -> Result<(), sqlx::Error> {
    let mut conn = pool.acquire().await?;
    sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await?;
    let result = async {
        let done: i64 = sqlx::query_scalar("PRAGMA user_version")
            .fetch_one(&mut *conn)
            .await?;
        let done = usize::try_from(done).unwrap_or(0);
        for sql in SQLITE_MIGRATIONS.iter().skip(done) {
            sqlx::raw_sql(*sql).execute(&mut *conn).await?;
        }
        if done < SQLITE_MIGRATIONS.len() {
            let set = format!("PRAGMA user_version = {}", SQLITE_MIGRATIONS.len());
            sqlx::query(sqlx::AssertSqlSafe(set))
                .execute(&mut *conn)
                .await?;
        }
        Ok::<(), sqlx::Error>(())
    }
    .await;
    let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
    let ended = sqlx::query(end).execute(&mut *conn).await;
    result?;
    ended?;
    Ok(())
}

/// SQLITE_BUSY, and its extended codes: another connection holds the lock this step needs and
/// SQLite chose not to wait (switching a new file to WAL while another process migrates it is
/// one such step: the busy handler is skipped there to avoid a deadlock).
fn is_busy(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|c| matches!(c.as_ref(), "5" | "261" | "517"))
}

pub(crate) fn now_ms() -> i64 {
    (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

fn time_of(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

const COLUMNS: &str = "id, service, operation, idem_key, context, request, state, attempts, \
                       created_ms, updated_ms, outcome, refs";

impl Db {
    pub(crate) async fn open_sqlite(path: &Path) -> Result<Db, JournalError> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: every commit is on disk before the request it records is sent.
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(30));
        // Processes opening a new file at once may meet SQLITE_BUSY where SQLite does not wait
        // (CI found it): try again, with a growing pause, for up to 30 s.
        let started = std::time::Instant::now();
        let mut pause = Duration::from_millis(10);
        loop {
            let opened = async {
                let pool = SqlitePoolOptions::new()
                    .max_connections(4)
                    .connect_with(options.clone())
                    .await
                    .map_err(|e| (e, JournalError::open as fn(sqlx::Error) -> JournalError))?;
                if let Err(e) = migrate_sqlite(&pool).await {
                    pool.close().await;
                    return Err((e, JournalError::migrate as fn(sqlx::Error) -> JournalError));
                }
                Ok(pool)
            }
            .await;
            match opened {
                Ok(pool) => return Ok(Db::Sqlite(pool)),
                Err((e, _)) if is_busy(&e) && started.elapsed() < Duration::from_secs(30) => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                Err((e, kind)) => return Err(kind(e)),
            }
        }
    }

    pub(crate) async fn open_postgres(url: &str) -> Result<Db, JournalError> {
        let options =
            sqlx::postgres::PgConnectOptions::from_str(url).map_err(JournalError::open)?;
        // One connection first: a server that is not there fails now, plainly, instead of
        // after the pool's retries.
        {
            use sqlx::Connection;
            let first = sqlx::postgres::PgConnection::connect_with(&options)
                .await
                .map_err(JournalError::open)?;
            let _ = first.close().await;
        }
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options)
            .await
            .map_err(JournalError::open)?;
        migrator(include_str!("../migrations/postgres/0001_entries.sql"))
            .run(&pool)
            .await
            .map_err(JournalError::migrate)?;
        Ok(Db::Postgres(pool))
    }

    pub(crate) fn backend(&self) -> Backend {
        match self {
            Db::Sqlite(_) => Backend::Sqlite,
            Db::Postgres(_) => Backend::Postgres,
        }
    }

    pub(crate) async fn close(&self) {
        on_db!(self, pool => pool.close().await)
    }

    /// Insert a new entry for `request`, leased to `owner` for `lease_ms`; `None` when the key is
    /// already recorded.
    pub(crate) async fn insert(
        &self,
        request: &Request<'_>,
        owner: &str,
        lease_ms: i64,
    ) -> Result<Option<i64>, JournalError> {
        const SQL: &str = "INSERT INTO whish_journal_entries \
            (service, operation, idem_key, context, request, state, attempts, created_ms, \
             updated_ms, lease_owner, lease_until_ms) \
            VALUES ($1, $2, $3, $4, $5, 'intended', 1, $6, $6, $7, $8) \
            ON CONFLICT (service, operation, idem_key) DO NOTHING RETURNING id";
        let now = now_ms();
        on_db!(self, pool => {
            let row = sqlx::query(SQL)
                .bind(request.service.as_str())
                .bind(request.operation.as_str())
                .bind(request.key)
                .bind(request.context)
                .bind(request.body)
                .bind(now)
                .bind(owner)
                .bind(now.saturating_add(lease_ms))
                .fetch_optional(pool)
                .await
                .map_err(JournalError::write)?;
            row.map(|r| r.try_get::<i64, _>("id")).transpose().map_err(JournalError::read)
        })
    }

    /// Take the lease of an existing entry for another send of the same request, unless another
    /// owner holds an unexpired lease. Returns whether it was taken.
    pub(crate) async fn take_lease(
        &self,
        id: i64,
        owner: &str,
        lease_ms: i64,
    ) -> Result<bool, JournalError> {
        const SQL: &str = "UPDATE whish_journal_entries \
            SET lease_owner = $2, lease_until_ms = $3, attempts = attempts + 1, updated_ms = $4 \
            WHERE id = $1 AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until_ms < $4)";
        let now = now_ms();
        on_db!(self, pool => {
            let done = sqlx::query(SQL)
                .bind(id)
                .bind(owner)
                .bind(now.saturating_add(lease_ms))
                .bind(now)
                .execute(pool)
                .await
                .map_err(JournalError::write)?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Record where an entry stands, and release its lease. Only the lease holder writes.
    pub(crate) async fn finish(
        &self,
        id: i64,
        owner: &str,
        state: State,
        outcome: &Outcome,
        refs: &References,
    ) -> Result<bool, JournalError> {
        const SQL: &str = "UPDATE whish_journal_entries \
            SET state = $3, outcome = $4, refs = $5, updated_ms = $6, \
                lease_owner = NULL, lease_until_ms = NULL \
            WHERE id = $1 AND lease_owner = $2";
        let outcome = serde_json::to_string(outcome).map_err(JournalError::encode)?;
        let refs = serde_json::to_string(refs).map_err(JournalError::encode)?;
        on_db!(self, pool => {
            let done = sqlx::query(SQL)
                .bind(id)
                .bind(owner)
                .bind(state.as_str())
                .bind(&outcome)
                .bind(&refs)
                .bind(now_ms())
                .execute(pool)
                .await
                .map_err(JournalError::write)?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Release a lease without changing anything else (an entry left as it was).
    pub(crate) async fn release(&self, id: i64, owner: &str) -> Result<(), JournalError> {
        const SQL: &str = "UPDATE whish_journal_entries \
            SET lease_owner = NULL, lease_until_ms = NULL WHERE id = $1 AND lease_owner = $2";
        on_db!(self, pool => {
            sqlx::query(SQL).bind(id).bind(owner).execute(pool).await.map_err(JournalError::write)?;
            Ok(())
        })
    }

    /// Lease up to `limit` open entries after `after` (by id) whose lease is free or expired.
    /// On PostgreSQL, rows another process is claiming at this moment are skipped, not waited
    /// for (`FOR UPDATE SKIP LOCKED`); on SQLite the statement runs alone (one writer).
    pub(crate) async fn claim_open(
        &self,
        owner: &str,
        lease_ms: i64,
        after: i64,
        limit: i64,
        take_over: bool,
    ) -> Result<Vec<Entry>, JournalError> {
        let lock = match self {
            Db::Sqlite(_) => "",
            Db::Postgres(_) => "FOR UPDATE SKIP LOCKED",
        };
        let sql = format!(
            "UPDATE whish_journal_entries \
             SET lease_owner = $1, lease_until_ms = $2, attempts = attempts + 1 \
             WHERE id IN (SELECT id FROM whish_journal_entries \
                 WHERE state IN ('intended', 'may-have-arrived', 'pending') \
                   AND id > $3 AND (lease_until_ms IS NULL OR lease_until_ms < $4) \
                 ORDER BY id LIMIT $5 {lock}) \
             RETURNING {COLUMNS}"
        );
        let now = now_ms();
        let mut entries = on_db!(self, pool => {
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(owner)
                .bind(now.saturating_add(lease_ms))
                .bind(after)
                .bind(if take_over { i64::MAX } else { now })
                .bind(limit)
                .fetch_all(pool)
                .await
                .map_err(JournalError::write)?;
            rows.iter().map(entry_of).collect::<Result<Vec<_>, _>>()?
        });
        entries.sort_by_key(|e| e.id);
        Ok(entries)
    }

    /// The open entries another owner holds a lease on that has not expired: recovery cannot
    /// take them, and says so.
    pub(crate) async fn leased_elsewhere(
        &self,
        owner: &str,
    ) -> Result<Vec<(Entry, String, i64)>, JournalError> {
        let sql = format!(
            "SELECT {COLUMNS}, lease_owner, lease_until_ms FROM whish_journal_entries \
             WHERE state IN ('intended', 'may-have-arrived', 'pending') \
               AND lease_owner IS NOT NULL AND lease_owner <> $1 AND lease_until_ms >= $2 \
             ORDER BY id"
        );
        on_db!(self, pool => {
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(owner)
                .bind(now_ms())
                .fetch_all(pool)
                .await
                .map_err(JournalError::read)?;
            rows.iter()
                .map(|r| {
                    let entry = entry_of(r)?;
                    let holder: String = r.try_get("lease_owner").map_err(JournalError::read)?;
                    let until: i64 = r.try_get("lease_until_ms").map_err(JournalError::read)?;
                    Ok((entry, holder, until))
                })
                .collect()
        })
    }

    pub(crate) async fn list(
        &self,
        open_only: bool,
        limit: i64,
    ) -> Result<Vec<Entry>, JournalError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM whish_journal_entries {} ORDER BY id LIMIT $1",
            if open_only {
                "WHERE state IN ('intended', 'may-have-arrived', 'pending', 'needs-operator')"
            } else {
                ""
            }
        );
        on_db!(self, pool => {
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(limit)
                .fetch_all(pool)
                .await
                .map_err(JournalError::read)?;
            rows.iter().map(entry_of).collect()
        })
    }

    pub(crate) async fn by_key(&self, key: &str) -> Result<Vec<Entry>, JournalError> {
        let sql =
            format!("SELECT {COLUMNS} FROM whish_journal_entries WHERE idem_key = $1 ORDER BY id");
        on_db!(self, pool => {
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(key)
                .fetch_all(pool)
                .await
                .map_err(JournalError::read)?;
            rows.iter().map(entry_of).collect()
        })
    }

    pub(crate) async fn get(
        &self,
        service: Service,
        operation: Operation,
        key: &str,
    ) -> Result<Option<Entry>, JournalError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM whish_journal_entries \
             WHERE service = $1 AND operation = $2 AND idem_key = $3"
        );
        on_db!(self, pool => {
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(service.as_str())
                .bind(operation.as_str())
                .bind(key)
                .fetch_optional(pool)
                .await
                .map_err(JournalError::read)?;
            row.as_ref().map(entry_of).transpose()
        })
    }

    /// Move open entries created before `cutoff_ms` that nobody holds to `needs-operator`.
    pub(crate) async fn mark_needs_operator(
        &self,
        id: i64,
        owner: &str,
        outcome: &Outcome,
    ) -> Result<(), JournalError> {
        const SQL: &str = "UPDATE whish_journal_entries \
            SET state = 'needs-operator', outcome = $3, updated_ms = $4, \
                lease_owner = NULL, lease_until_ms = NULL \
            WHERE id = $1 AND lease_owner = $2";
        let outcome = serde_json::to_string(outcome).map_err(JournalError::encode)?;
        on_db!(self, pool => {
            sqlx::query(SQL)
                .bind(id)
                .bind(owner)
                .bind(&outcome)
                .bind(now_ms())
                .execute(pool)
                .await
                .map_err(JournalError::write)?;
            Ok(())
        })
    }

    /// Delete final entries (and delivered status changes) last changed before `cutoff_ms`.
    pub(crate) async fn prune(&self, cutoff_ms: i64) -> Result<u64, JournalError> {
        const ENTRIES: &str = "DELETE FROM whish_journal_entries \
            WHERE state IN ('accepted', 'refused') AND updated_ms < $1";
        const CHANGES: &str = "DELETE FROM whish_journal_notifications \
            WHERE delivered_ms IS NOT NULL AND delivered_ms < $1";
        on_db!(self, pool => {
            let n = sqlx::query(ENTRIES).bind(cutoff_ms).execute(pool).await.map_err(JournalError::write)?;
            sqlx::query(CHANGES).bind(cutoff_ms).execute(pool).await.map_err(JournalError::write)?;
            Ok(n.rows_affected())
        })
    }

    /// Claim (subject, status) for delivery: true when it was never recorded, or recorded but
    /// not delivered and its claim older than `reclaim_before_ms`.
    pub(crate) async fn claim(
        &self,
        subject: &str,
        status: &str,
        reclaim_before_ms: i64,
    ) -> Result<bool, JournalError> {
        const SQL: &str = "INSERT INTO whish_journal_notifications \
            (subject, status, recorded_ms, delivered_ms) VALUES ($1, $2, $3, NULL) \
            ON CONFLICT (subject, status) DO UPDATE SET recorded_ms = excluded.recorded_ms \
            WHERE whish_journal_notifications.delivered_ms IS NULL \
              AND whish_journal_notifications.recorded_ms < $4";
        on_db!(self, pool => {
            let done = sqlx::query(SQL)
                .bind(subject)
                .bind(status)
                .bind(now_ms())
                .bind(reclaim_before_ms)
                .execute(pool)
                .await
                .map_err(JournalError::write)?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Mark (subject, status) delivered: it is never claimed again.
    pub(crate) async fn delivered(&self, subject: &str, status: &str) -> Result<(), JournalError> {
        const SQL: &str = "UPDATE whish_journal_notifications SET delivered_ms = $3 \
            WHERE subject = $1 AND status = $2";
        on_db!(self, pool => {
            sqlx::query(SQL)
                .bind(subject)
                .bind(status)
                .bind(now_ms())
                .execute(pool)
                .await
                .map_err(JournalError::write)?;
            Ok(())
        })
    }

    /// Drop an undelivered claim, so the next sighting claims it at once.
    pub(crate) async fn release_claim(
        &self,
        subject: &str,
        status: &str,
    ) -> Result<(), JournalError> {
        const SQL: &str = "DELETE FROM whish_journal_notifications \
            WHERE subject = $1 AND status = $2 AND delivered_ms IS NULL";
        on_db!(self, pool => {
            sqlx::query(SQL).bind(subject).bind(status).execute(pool).await.map_err(JournalError::write)?;
            Ok(())
        })
    }

    /// The statuses recorded for a subject, oldest first.
    pub(crate) async fn statuses(&self, subject: &str) -> Result<Vec<String>, JournalError> {
        const SQL: &str = "SELECT status FROM whish_journal_notifications \
            WHERE subject = $1 ORDER BY recorded_ms, status";
        on_db!(self, pool => {
            let rows = sqlx::query(SQL).bind(subject).fetch_all(pool).await.map_err(JournalError::read)?;
            rows.iter()
                .map(|r| r.try_get::<String, _>("status").map_err(JournalError::read))
                .collect()
        })
    }
}

fn entry_of<R: Row>(row: &R) -> Result<Entry, JournalError>
where
    usize: sqlx::ColumnIndex<R>,
    for<'r> &'r str: sqlx::ColumnIndex<R>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Vec<u8>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let text = |name: &str| row.try_get::<String, _>(name).map_err(JournalError::read);
    let opt = |name: &str| {
        row.try_get::<Option<String>, _>(name)
            .map_err(JournalError::read)
    };
    let int = |name: &str| row.try_get::<i64, _>(name).map_err(JournalError::read);
    let service = text("service")?;
    let operation = text("operation")?;
    let state = text("state")?;
    Ok(Entry {
        id: int("id")?,
        service: Service::parse(&service)
            .ok_or_else(|| JournalError::unknown("service", &service))?,
        operation: Operation::parse(&operation)
            .ok_or_else(|| JournalError::unknown("operation", &operation))?,
        key: text("idem_key")?,
        context: opt("context")?,
        request: row
            .try_get::<Vec<u8>, _>("request")
            .map_err(JournalError::read)?,
        state: State::parse(&state).ok_or_else(|| JournalError::unknown("state", &state))?,
        attempts: u32::try_from(int("attempts")?).unwrap_or(u32::MAX),
        created: time_of(int("created_ms")?),
        updated: time_of(int("updated_ms")?),
        outcome: opt("outcome")?
            .map(|o| serde_json::from_str(&o))
            .transpose()
            .map_err(JournalError::encode)?,
        references: opt("refs")?
            .map(|r| serde_json::from_str(&r))
            .transpose()
            .map_err(JournalError::encode)?
            .unwrap_or_default(),
    })
}
