//! The lock that makes a check for a payment made before and the intent written after it one
//! step: whoever holds it is the only process checking the journal for a body and recording a
//! send of it, so two sends of one body started at once see each other.
//!
//! It is held by the operating system or the database server, never by a row: a process that
//! dies holding it lets it go with its file descriptors (SQLite) or its session (PostgreSQL).

use std::time::Duration;

use super::*;

/// The advisory-lock key a PostgreSQL journal's repeat check holds (`whish-rp` in ASCII): one
/// for the database, as the journal's table is.
#[cfg(feature = "postgres")]
const PG_KEY: i64 = 0x7768_6973_682d_7270;

/// The longest a PostgreSQL journal's lock connection may take to open.
#[cfg(feature = "postgres")]
const PG_CONNECT: Duration = Duration::from_secs(30);

/// The repeat check, held until dropped or released.
#[derive(Debug)]
pub(crate) enum RepeatLock {
    /// An exclusive `flock` on the directory that holds the journal file (see
    /// [`lock_target`]).
    #[cfg(feature = "sqlite")]
    File(std::fs::File),
    /// A session-level advisory lock, on a connection of its own: closing it ends the session,
    /// which lets the lock go even when the unlock is never run.
    #[cfg(feature = "postgres")]
    Session(Option<sqlx::postgres::PgConnection>),
}

/// What a SQLite journal's repeat check locks: on unix, the directory holding the journal file,
/// found through its real path (a journal named through a symbolic link, or a relative path,
/// locks what its other names lock). Every process that can use the journal can open its
/// directory for reading, so the lock needs no file of its own, no write access, and no inode
/// (a lock file would refuse sends on a full disk or in a read-only directory, and a lock file
/// some processes could create and others not would keep nobody apart). Journals that share a
/// directory share the lock: their checks take turns, which costs a few milliseconds each.
/// Elsewhere, a file beside the journal (`<journal>-repeat-lock`).
#[cfg(feature = "sqlite")]
fn lock_target(journal: &Path) -> std::io::Result<std::fs::File> {
    let real = std::fs::canonicalize(journal)?;
    #[cfg(unix)]
    {
        let dir = real.parent().unwrap_or(Path::new("/"));
        std::fs::File::open(dir)
    }
    #[cfg(not(unix))]
    {
        let mut path = real.into_os_string();
        path.push("-repeat-lock");
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
    }
}

impl Db {
    /// Wait for the repeat check and hold it. A future dropped while it waits holds nothing
    /// afterwards (on PostgreSQL the server may hold the lock for the moment it takes to see
    /// the connection closed).
    pub(crate) async fn repeat_lock(&self) -> Result<RepeatLock, JournalError> {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(d) => {
                let failed = |e: std::io::Error| {
                    JournalError::new(
                        crate::JournalErrorKind::Read,
                        format!(
                            "cannot take the repeat check's lock on the directory of {}: {e}",
                            d.file.path.display()
                        ),
                    )
                };
                let file = lock_target(&d.file.path).map_err(failed)?;
                // Polled, not a blocking `lock`: a caller that gives up leaves no thread
                // waiting on the lock.
                let mut pause = Duration::from_millis(1);
                loop {
                    match file.try_lock() {
                        Ok(()) => return Ok(RepeatLock::File(file)),
                        Err(std::fs::TryLockError::WouldBlock) => {
                            tokio::time::sleep(pause).await;
                            pause = (pause * 2).min(Duration::from_millis(20));
                        }
                        Err(std::fs::TryLockError::Error(e)) => return Err(failed(e)),
                    }
                }
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(d) => {
                use sqlx::Connection;
                let options = d.pool.connect_options();
                let mut conn = tokio::time::timeout(
                    PG_CONNECT,
                    sqlx::postgres::PgConnection::connect_with(&options),
                )
                .await
                .map_err(JournalError::read)?
                .map_err(JournalError::read)?;
                // The wait is for another holder, however long it holds: no timeout from the
                // URL's options ends it. The server probes a silent client every few seconds,
                // so a holder whose machine is gone lets go within a minute, not the system's
                // two hours.
                for setting in [
                    "SET statement_timeout = 0",
                    "SET lock_timeout = 0",
                    "SET tcp_keepalives_idle = 10",
                    "SET tcp_keepalives_interval = 5",
                    "SET tcp_keepalives_count = 6",
                ] {
                    sqlx::query(setting)
                        .execute(&mut conn)
                        .await
                        .map_err(JournalError::read)?;
                }
                sqlx::query("SELECT pg_advisory_lock($1)")
                    .bind(PG_KEY)
                    .execute(&mut conn)
                    .await
                    .map_err(JournalError::read)?;
                Ok(RepeatLock::Session(Some(conn)))
            }
        }
    }
}

impl RepeatLock {
    /// Let it go now. (Dropping it lets it go too: a PostgreSQL session then ends when the
    /// server sees its connection closed.)
    pub(crate) async fn release(mut self) {
        match &mut self {
            #[cfg(feature = "sqlite")]
            RepeatLock::File(file) => {
                let _ = file.unlock();
            }
            #[cfg(feature = "postgres")]
            RepeatLock::Session(conn) => {
                use sqlx::Connection;
                if let Some(mut conn) = conn.take() {
                    // A failed unlock: closing the session lets the lock go.
                    let _ = sqlx::query("SELECT pg_advisory_unlock($1)")
                        .bind(PG_KEY)
                        .execute(&mut conn)
                        .await;
                    let _ = conn.close().await;
                }
            }
        }
    }
}
