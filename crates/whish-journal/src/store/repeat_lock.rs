//! The lock that makes a check for a payment made before and the intent written after it one
//! step: whoever holds it is the only process checking the journal for a body and recording a
//! send of it, so two sends of one body started at once see each other.
//!
//! It is held by the operating system or the database server, never by a row: a process that
//! dies holding it (SIGKILL, a power cut) lets it go with its file descriptors or its session.

use super::*;

/// The advisory-lock key a PostgreSQL journal's repeat check holds (`whish-rp` in ASCII): one
/// for the database, as the journal's table is.
#[cfg(feature = "postgres")]
const PG_KEY: i64 = 0x7768_6973_682d_7270;

/// The repeat check, held until dropped or released.
#[derive(Debug)]
pub(crate) enum RepeatLock {
    /// An exclusive lock on the file beside the journal (`<journal>-repeat-lock`).
    #[cfg(feature = "sqlite")]
    File(std::fs::File),
    /// A session-level advisory lock, on a connection of its own: closing it ends the session,
    /// which lets the lock go even when the unlock is never run.
    #[cfg(feature = "postgres")]
    Session(Option<sqlx::postgres::PgConnection>),
}

impl Db {
    /// Wait for the repeat check and hold it.
    pub(crate) async fn repeat_lock(&self) -> Result<RepeatLock, JournalError> {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(d) => {
                let mut path = d.file.path.clone().into_os_string();
                path.push("-repeat-lock");
                let file = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&path)
                    .map_err(JournalError::write)?;
                // `lock` blocks the thread until the holder lets go.
                tokio::task::spawn_blocking(move || file.lock().map(|()| file))
                    .await
                    .map_err(JournalError::write)?
                    .map(RepeatLock::File)
                    .map_err(JournalError::write)
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(d) => {
                use sqlx::Connection;
                let options = d.pool.connect_options();
                let mut conn = sqlx::postgres::PgConnection::connect_with(&options)
                    .await
                    .map_err(JournalError::write)?;
                sqlx::query("SELECT pg_advisory_lock($1)")
                    .bind(PG_KEY)
                    .execute(&mut conn)
                    .await
                    .map_err(JournalError::write)?;
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
                    let unlocked = sqlx::query("SELECT pg_advisory_unlock($1)")
                        .bind(PG_KEY)
                        .execute(&mut conn)
                        .await;
                    // A failed unlock: closing the session lets the lock go.
                    drop(unlocked);
                    let _ = conn.close().await;
                }
            }
        }
    }
}
