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

/// The prefix of every database [`fresh_postgres_database`] makes.
#[cfg(feature = "postgres")]
const PREFIX: &str = "whish_test_";

/// How old a test database must be before a later run drops it: older than any test run.
#[cfg(feature = "postgres")]
const STALE: std::time::Duration = std::time::Duration::from_secs(3600);

/// A fresh database on the server at `admin` (a URL naming a database the role may connect
/// to), for one test: its URL. Its name carries the time it was made, and the databases this
/// function made more than an hour ago (by any earlier run: nothing drops a test's database at
/// its end) are dropped first, once per process, so that a server the tests are run against
/// again and again does not fill up. A database with a session open is left (PostgreSQL
/// refuses to drop it); one of a run still going after an hour whose pool has closed its idle
/// connections would not be.
///
/// # Panics
/// When the server cannot be reached or the database cannot be made.
#[cfg(feature = "postgres")]
pub async fn fresh_postgres_database(admin: &str) -> String {
    use sqlx::Connection;
    static SWEPT: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut conn = sqlx::PgConnection::connect(admin)
        .await
        .expect("connect to the test PostgreSQL server");
    SWEPT
        .get_or_init(|| async {
            let names: Vec<String> =
                sqlx::query_scalar("SELECT datname FROM pg_database WHERE datname LIKE $1")
                    .bind(format!("{PREFIX}%"))
                    .fetch_all(&mut conn)
                    .await
                    .unwrap_or_default();
            let cutoff = now.saturating_sub(STALE.as_secs());
            for name in names.iter().filter(|n| made_before(n, cutoff)) {
                // In use (a run still going): left for a later sweep.
                let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS {name}"
                )))
                .execute(&mut conn)
                .await;
            }
        })
        .await;
    let name = format!("{PREFIX}{now}_{:016x}", random_u64());
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .expect("create a test database");
    let (base, _) = admin.rsplit_once('/').expect("a URL with a database name");
    format!("{base}/{name}")
}

/// Whether `name` is a database [`fresh_postgres_database`] made before `cutoff` (epoch
/// seconds). A name of another shape is never one.
#[cfg(feature = "postgres")]
fn made_before(name: &str, cutoff: u64) -> bool {
    name.strip_prefix(PREFIX)
        .and_then(|rest| rest.split_once('_'))
        .filter(|(_, tail)| tail.len() == 16 && tail.bytes().all(|b| b.is_ascii_hexdigit()))
        .and_then(|(secs, _)| secs.parse::<u64>().ok())
        .is_some_and(|made| made < cutoff)
}

/// 64 random bits from the standard library's hasher keys (no random-number crate).
#[cfg(feature = "postgres")]
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.write_u32(std::process::id());
    h.finish()
}

#[cfg(all(test, feature = "postgres"))]
mod tests {
    use super::made_before;

    #[test]
    fn only_a_database_of_this_shape_made_before_the_cutoff_is_stale() {
        assert!(made_before("whish_test_1000_0123456789abcdef", 1001));
        assert!(!made_before("whish_test_1000_0123456789abcdef", 1000));
        // Another shape: an older run's uuid names, someone else's database.
        assert!(!made_before(
            "whish_test_0123456789abcdef0123456789abcdef",
            u64::MAX
        ));
        assert!(!made_before("whish_test_1000_xyz", u64::MAX));
        assert!(!made_before("orders_1000_0123456789abcdef", u64::MAX));
    }
}
