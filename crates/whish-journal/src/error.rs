//! The journal's own errors: the database could not be opened, read or written.

use std::fmt;
use std::sync::Arc;

/// What part of the journal failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JournalErrorKind {
    /// The URL is not a journal address (`sqlite:PATH`, a path, or `postgres://...`).
    Url,
    /// The database could not be opened or reached.
    Open,
    /// The journal's tables could not be created or brought up to date.
    Migrate,
    /// A write failed.
    Write,
    /// A read failed, or a row holds what this version does not know.
    Read,
}

/// The journal could not do what was asked. The message never holds a credential: a
/// PostgreSQL URL's password is not repeated.
#[derive(Clone)]
#[non_exhaustive]
pub struct JournalError {
    /// What failed.
    pub kind: JournalErrorKind,
    /// One line.
    pub message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl JournalError {
    pub(crate) fn new(kind: JournalErrorKind, message: impl Into<String>) -> JournalError {
        JournalError {
            kind,
            message: message.into(),
            source: None,
        }
    }

    fn with<E: std::error::Error + Send + Sync + 'static>(
        kind: JournalErrorKind,
        what: &str,
        e: E,
    ) -> JournalError {
        JournalError {
            kind,
            message: format!("{what}: {}", redact(&e.to_string())),
            source: Some(Arc::new(e)),
        }
    }

    pub(crate) fn open<E: std::error::Error + Send + Sync + 'static>(e: E) -> JournalError {
        JournalError::with(JournalErrorKind::Open, "cannot open the journal", e)
    }
    pub(crate) fn migrate<E: std::error::Error + Send + Sync + 'static>(e: E) -> JournalError {
        JournalError::with(
            JournalErrorKind::Migrate,
            "cannot create the journal's tables",
            e,
        )
    }
    /// True when the failed statement provably never committed: it never reached the database
    /// (no connection could be had from the pool), or SQLite refused it before writing (the
    /// disk full, the database busy or locked: SQLite runs in this process, so its answer
    /// cannot be lost after a commit). A write whose answer was lost on the network is never
    /// one of these.
    pub(crate) fn never_committed(&self) -> bool {
        let Some(sqlx) = self
            .source
            .as_deref()
            .and_then(|e| e.downcast_ref::<sqlx::Error>())
        else {
            return false;
        };
        match sqlx {
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => true,
            #[cfg(feature = "sqlite")]
            sqlx::Error::Database(db)
                if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() =>
            {
                // SQLITE_FULL, SQLITE_BUSY and SQLITE_LOCKED, with their extended codes.
                let code = db.code().and_then(|c| c.parse::<i32>().ok()).unwrap_or(0);
                matches!(code & 0xff, 5 | 6 | 13)
            }
            _ => false,
        }
    }

    pub(crate) fn write<E: std::error::Error + Send + Sync + 'static>(e: E) -> JournalError {
        JournalError::with(JournalErrorKind::Write, "cannot write the journal", e)
    }
    pub(crate) fn read<E: std::error::Error + Send + Sync + 'static>(e: E) -> JournalError {
        JournalError::with(JournalErrorKind::Read, "cannot read the journal", e)
    }
    pub(crate) fn encode<E: std::error::Error + Send + Sync + 'static>(e: E) -> JournalError {
        JournalError::with(JournalErrorKind::Read, "a journal row is not readable", e)
    }
    pub(crate) fn unknown(column: &str, value: &str) -> JournalError {
        JournalError::new(
            JournalErrorKind::Read,
            format!(
                "a journal row holds {column} `{}`, unknown to this version",
                value.escape_debug()
            ),
        )
    }
}

/// Drop anything that looks like `user:password@` from a message (a database driver may repeat
/// the URL it was given).
pub(crate) fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_inclusive(char::is_whitespace) {
        match (word.find("://"), word.rfind('@')) {
            (Some(scheme), Some(at)) if at > scheme => {
                out.push_str(&word[..scheme + 3]);
                out.push_str("***");
                out.push_str(&word[at..]);
            }
            _ => out.push_str(word),
        }
    }
    out
}

impl fmt::Debug for JournalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JournalError")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .finish()
    }
}

impl fmt::Display for JournalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JournalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_password_in_a_url_is_not_repeated() {
        assert_eq!(
            super::redact("error connecting to postgres://app:hunter2@db:5432/j failed"),
            "error connecting to postgres://***@db:5432/j failed"
        );
        assert_eq!(super::redact("no url here"), "no url here");
    }
}
