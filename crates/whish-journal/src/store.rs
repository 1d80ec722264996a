//! The two backends behind one set of statements. The SQL is written once: both SQLite and
//! PostgreSQL read `$1`-style parameters, `ON CONFLICT` and `RETURNING`; only the row lease of
//! a recovery differs (`FOR UPDATE SKIP LOCKED` on PostgreSQL; SQLite has one writer).
//!
//! Two rules every write keeps:
//!
//! - **A write is read to its end** (`fetch_all`, `execute`), never with `fetch_optional` or
//!   `fetch_one`. With `RETURNING`, SQLite makes its changes at the statement's first step and
//!   commits when the statement is reset; a reader that stops after the first row does not see
//!   a commit that failed (a full disk), and would report unwritten as written.
//! - **A connection whose write transaction failed is closed**, never returned to the pool. On
//!   `SQLITE_FULL` or an I/O error SQLite may roll the transaction back by itself, while sqlx
//!   still counts it open: the next `begin` on that connection would be a savepoint inside a
//!   transaction that never commits, holding the write lock. Closing the connection rolls back
//!   whatever it held.

#[cfg(feature = "postgres")]
use std::borrow::Cow;
#[cfg(feature = "sqlite")]
use std::path::Path;
#[cfg(feature = "postgres")]
use std::str::FromStr;
use std::time::Duration;

use sqlx::Row;
#[cfg(feature = "postgres")]
use sqlx::SqlSafeStr;
#[cfg(feature = "postgres")]
use sqlx::migrate::{Migration, MigrationType, Migrator};
#[cfg(feature = "postgres")]
use sqlx::postgres::{PgPool, PgPoolOptions};
#[cfg(feature = "sqlite")]
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use time::OffsetDateTime;

use crate::entry::{Entry, Operation, RecordedOutcome, References, Service, State};
use crate::error::JournalError;

/// Run `body` on a connection of `pool`, and close that connection instead of returning it to
/// the pool when `body` fails (see the module's note): every write transaction goes through
/// here. `acquire` says what a connection that cannot be had is.
pub(crate) async fn closed_on_failure<DB: sqlx::Database, T, E>(
    pool: &sqlx::Pool<DB>,
    acquire: impl FnOnce(sqlx::Error) -> E,
    body: impl AsyncFnOnce(&mut DB::Connection) -> Result<T, E>,
) -> Result<T, E> {
    let mut conn = pool.acquire().await.map_err(acquire)?;
    let done = body(&mut *conn).await;
    if done.is_err() {
        conn.close_on_drop();
    }
    done
}

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
    #[cfg(feature = "sqlite")]
    Sqlite(SqliteDb),
    #[cfg(feature = "postgres")]
    Postgres(PgDb),
}

/// A SQLite journal: the synchronous pool (every commit fsynced: the intents), the relaxed pool
/// (`synchronous = NORMAL`: the outcomes, durable with the next synchronous commit), the file,
/// and the group-commit writer, whose write turn every write of this process takes.
#[cfg(feature = "sqlite")]
#[derive(Debug, Clone)]
pub(crate) struct SqliteDb {
    pool: SqlitePool,
    relaxed: SqlitePool,
    file: FileId,
    writer: crate::store::group::Writer,
    unsynced: Unsynced,
}

/// A PostgreSQL journal: the synchronous pool and the relaxed one (`synchronous_commit = off`).
#[cfg(feature = "postgres")]
#[derive(Debug, Clone)]
pub(crate) struct PgDb {
    pool: PgPool,
    relaxed: PgPool,
    unsynced: Unsynced,
}

/// Whether a relaxed write (committed without waiting for the disk) was made since the last
/// [`Db::sync`]; never set when every outcome is durable.
#[derive(Debug, Clone)]
pub(crate) struct Unsynced {
    relaxed: bool,
    written: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Unsynced {
    fn new(relaxed: bool) -> Unsynced {
        Unsynced {
            relaxed,
            written: std::sync::Arc::default(),
        }
    }

    /// After a relaxed write committed (not before: a sync that begins between the two would
    /// then not cover it).
    fn wrote(&self) {
        if self.relaxed {
            self.written
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// Whether a sync is due, and it is no longer (until the next relaxed write).
    fn take(&self) -> bool {
        self.written
            .swap(false, std::sync::atomic::Ordering::SeqCst)
    }

    fn again(&self) {
        self.written
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[cfg(feature = "sqlite")]
/// Which file a SQLite journal opened: a file deleted or replaced under a running process is
/// noticed, instead of writes that go to a file nobody will read.
#[derive(Debug, Clone)]
pub(crate) struct FileId {
    path: std::path::PathBuf,
    /// (device, inode) when the platform has them.
    id: Option<(u64, u64)>,
}

#[cfg(feature = "sqlite")]
impl FileId {
    fn of(path: &Path) -> FileId {
        FileId {
            path: path.to_owned(),
            id: file_id(path),
        }
    }

    /// The file opened is still the one at its path.
    fn check(&self) -> Result<(), JournalError> {
        let now = file_id(&self.path);
        if self.id.is_some() && now == self.id {
            return Ok(());
        }
        Err(JournalError::new(
            crate::JournalErrorKind::Write,
            format!(
                "the journal file {} was {} while this process had it open; nothing more is recorded in it",
                self.path.display(),
                if now.is_none() { "deleted" } else { "replaced" }
            ),
        ))
    }
}

#[cfg(all(unix, feature = "sqlite"))]
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(all(not(unix), feature = "sqlite"))]
fn file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|_| (0, 0))
}

/// Run the same statement on whichever pool holds the journal: its synchronous pool.
macro_rules! on_db {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(d) => {
                let $pool = &d.pool;
                $body
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(d) => {
                let $pool = &d.pool;
                $body
            }
        }
    };
}

/// The same, on the relaxed pool: a write whose loss in a crash only leaves an entry open for
/// recovery to read again (an outcome, a lease's renewal), committed without waiting for the
/// disk. It is still executed before the call returns (the caller learns whether its lease
/// held), and it is durable with the next synchronous commit. The body's value is returned
/// after the write is counted for [`Db::sync`].
macro_rules! on_relaxed {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(d) => {
                let $pool = &d.relaxed;
                let done = $body;
                d.unsynced.wrote();
                done
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(d) => {
                let $pool = &d.relaxed;
                let done = $body;
                d.unsynced.wrote();
                done
            }
        }
    };
}

pub(crate) fn time_of(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// One request through the journal: its entry's identity and exact bytes.
#[derive(Clone, Copy)]
pub(crate) struct Request<'a> {
    pub service: Service,
    pub operation: Operation,
    pub key: &'a str,
    pub context: Option<&'a str>,
    pub body: &'a [u8],
    /// The service and account the request is for (`Transport::target`): recorded with it, and
    /// compared before anything sends it again.
    pub target: &'a str,
}

/// An entry this process holds: its row and the fencing token of its lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lease {
    pub id: i64,
    pub token: i64,
}

/// A row recovery leased: its lease, and the entry or why it cannot be read.
#[derive(Debug)]
pub(crate) struct Claimed {
    pub lease: Lease,
    pub key: String,
    pub holder: Option<String>,
    pub until_ms: Option<i64>,
    pub entry: Result<Entry, JournalError>,
}

mod clock;
#[cfg(feature = "sqlite")]
pub(crate) mod group;
mod notify;
mod open;
mod prune;
mod read;
mod repeat_lock;
mod repeats;
mod sql;
mod steps;

#[allow(unused_imports)]
pub(crate) use clock::*;
#[allow(unused_imports)]
pub(crate) use prune::*;
use read::*;
pub(crate) use repeat_lock::RepeatLock;
pub(crate) use repeats::{Along, PAGE as SEND_PAGE, SendRow};
pub(crate) use sql::*;

#[cfg(all(test, feature = "sqlite"))]
mod differential;
#[cfg(feature = "money-transfer")]
mod reserve;
#[cfg(all(test, feature = "sqlite"))]
mod tests;

#[cfg(all(test, feature = "sqlite"))]
impl Db {
    /// The group-commit writer of a SQLite journal.
    pub(crate) fn writer(&self) -> &crate::store::group::Writer {
        match self {
            Db::Sqlite(d) => &d.writer,
            #[allow(unreachable_patterns)]
            _ => panic!("a SQLite journal has a writer"),
        }
    }

    /// The synchronous pool of a SQLite journal.
    pub(crate) fn sqlite_pool(&self) -> &SqlitePool {
        match self {
            Db::Sqlite(d) => &d.pool,
            #[allow(unreachable_patterns)]
            _ => panic!("a SQLite journal"),
        }
    }
}
