//! The PostgreSQL server the tests use, when one is given.

/// The variable naming the server: a URL of a role that may create databases
/// (`scripts/postgres-throwaway.sh start` prints one).
pub const POSTGRES_VAR: &str = "WHISH_TEST_POSTGRES_URL";

/// The server's admin URL, or `None` after saying that `test`'s PostgreSQL part did not run.
/// Under CI (`CI=true`) a missing server is a failure: see [`crate::not_run`].
///
/// # Panics
/// Under CI without the variable.
pub fn postgres_admin_url(test: &str) -> Option<String> {
    match std::env::var(POSTGRES_VAR) {
        Ok(admin) if !admin.is_empty() => Some(admin),
        _ => {
            crate::not_run(
                test,
                "the PostgreSQL part",
                &format!(
                    "{POSTGRES_VAR} is not set (scripts/postgres-throwaway.sh start prints a URL)"
                ),
            );
            None
        }
    }
}

/// The URL of the SQLite journal file `journal.sqlite` in `dir`.
pub fn sqlite_journal_url(dir: &std::path::Path) -> String {
    format!("sqlite:{}", dir.join("journal.sqlite").display())
}
