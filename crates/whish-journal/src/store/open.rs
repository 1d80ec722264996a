//! Opening a journal: the migrations of each backend, the pools, the file a SQLite journal
//! opened, and closing it.

use super::*;

/// The table that records which of the journal's migrations ran. Its own name, so that a
/// PostgreSQL database shared with the application's own sqlx migrations keeps them apart.
#[cfg(feature = "postgres")]
pub(super) const MIGRATIONS_TABLE: &str = "whish_journal_migrations";

#[cfg(feature = "postgres")]
pub(super) fn migrator(sqls: &[(&'static str, &'static str)]) -> Migrator {
    let mut m = Migrator::with_migrations(
        sqls.iter()
            .enumerate()
            .map(|(i, (name, sql))| {
                Migration::new(
                    i as i64 + 1,
                    Cow::Borrowed(*name),
                    MigrationType::Simple,
                    (*sql).into_sql_str(),
                    false,
                )
            })
            .collect(),
    );
    m.dangerous_set_table_name(MIGRATIONS_TABLE);
    m
}

/// The PostgreSQL migrations, in order.
#[cfg(feature = "postgres")]
pub(super) const POSTGRES_MIGRATIONS: &[(&str, &str)] = &[
    (
        "entries",
        include_str!("../../migrations/postgres/0001_entries.sql"),
    ),
    (
        "fencing",
        include_str!("../../migrations/postgres/0002_fencing.sql"),
    ),
    (
        "unknown-states",
        include_str!("../../migrations/postgres/0003_unknown_states.sql"),
    ),
    (
        "prune-and-ranges",
        include_str!("../../migrations/postgres/0004_prune_and_ranges.sql"),
    ),
    (
        "target",
        include_str!("../../migrations/postgres/0005_target.sql"),
    ),
    (
        "inbox",
        include_str!("../../migrations/postgres/0006_inbox.sql"),
    ),
];

/// The SQLite migrations, in order; `PRAGMA user_version` records how many ran.
#[cfg(feature = "sqlite")]
pub(super) const SQLITE_MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/sqlite/0001_entries.sql"),
    include_str!("../../migrations/sqlite/0002_fencing.sql"),
    include_str!("../../migrations/sqlite/0003_unknown_states.sql"),
    include_str!("../../migrations/sqlite/0004_prune_and_ranges.sql"),
    include_str!("../../migrations/sqlite/0005_target.sql"),
    include_str!("../../migrations/sqlite/0006_inbox.sql"),
    include_str!("../../migrations/sqlite/0007_final_index_by_equalities.sql"),
];

/// Bring a SQLite journal up to date under `BEGIN IMMEDIATE`, the database's write lock: two
/// processes opening a new file at once run the migrations once (sqlx's migrator takes no lock
/// on SQLite, and the second process failed with "table already exists"; CI found it).
#[cfg(feature = "sqlite")]
pub(super) async fn migrate_sqlite(pool: &SqlitePool) -> Result<(), sqlx::Error> {
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
#[cfg(feature = "sqlite")]
pub(super) fn is_busy(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|c| matches!(c.as_ref(), "5" | "261" | "517"))
}

impl Db {
    #[cfg(feature = "sqlite")]
    pub(crate) async fn open_sqlite(
        path: &Path,
        durable_outcomes: bool,
    ) -> Result<Db, JournalError> {
        // The file is only ever opened through SQLite: closing any other descriptor of it would
        // drop the locks this process's connections hold on it (POSIX locks are per process).
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: every commit is on disk before the request it records is sent.
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(30));
        // Only the open creates the file: a connection opened later to a file deleted meanwhile
        // fails, where creating it would read an empty journal there.
        let later = options.clone().create_if_missing(false);
        // Processes opening a new file at once may meet SQLITE_BUSY where SQLite does not
        // wait: try again, with a growing pause, for up to 30 s.
        let started = std::time::Instant::now();
        let mut pause = Duration::from_millis(10);
        loop {
            let opened = async {
                // No ping before each use: a connection to a local file does not go stale, and
                // the ping is a round trip to the connection's thread before every statement.
                let pool = SqlitePoolOptions::new()
                    .max_connections(4)
                    .test_before_acquire(false)
                    .connect_with(options.clone())
                    .await
                    .map_err(|e| (e, JournalError::open as fn(sqlx::Error) -> JournalError))?;
                if let Err(e) = migrate_sqlite(&pool).await {
                    pool.close().await;
                    return Err((e, JournalError::migrate as fn(sqlx::Error) -> JournalError));
                }
                pool.set_connect_options(later.clone());
                Ok(pool)
            }
            .await;
            match opened {
                Ok(pool) => {
                    let relaxed = if durable_outcomes {
                        pool.clone()
                    } else {
                        SqlitePoolOptions::new()
                            .max_connections(2)
                            .test_before_acquire(false)
                            .connect_with(later.clone().synchronous(SqliteSynchronous::Normal))
                            .await
                            .map_err(JournalError::open)?
                    };
                    let writer = crate::store::group::Writer::start(
                        pool.clone(),
                        relaxed.clone(),
                        SQLITE_NOW,
                    );
                    return Ok(Db::Sqlite(SqliteDb {
                        pool,
                        relaxed,
                        file: FileId::of(path),
                        writer,
                        unsynced: Unsynced::new(!durable_outcomes),
                    }));
                }
                Err((e, _)) if is_busy(&e) && started.elapsed() < Duration::from_secs(30) => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                Err((e, kind)) => return Err(kind(e)),
            }
        }
    }

    #[cfg(feature = "postgres")]
    pub(crate) async fn open_postgres(
        url: &str,
        durable_outcomes: bool,
    ) -> Result<Db, JournalError> {
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
            .connect_with(options.clone())
            .await
            .map_err(JournalError::open)?;
        migrator(POSTGRES_MIGRATIONS)
            .run(&pool)
            .await
            .map_err(JournalError::migrate)?;
        let relaxed = if durable_outcomes {
            pool.clone()
        } else {
            PgPoolOptions::new()
                .max_connections(4)
                .acquire_timeout(Duration::from_secs(30))
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        use sqlx::Executor;
                        conn.execute("SET synchronous_commit = off").await?;
                        Ok(())
                    })
                })
                .connect_with(options)
                .await
                .map_err(JournalError::open)?
        };
        Ok(Db::Postgres(PgDb {
            pool,
            relaxed,
            unsynced: Unsynced::new(!durable_outcomes),
        }))
    }

    /// For SQLite: the file opened is still the one at its path. (PostgreSQL: a dropped
    /// database fails the next statement by itself.)
    pub(crate) fn check_file(&self) -> Result<(), JournalError> {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(d) => d.file.check(),
            #[allow(unreachable_patterns)]
            _ => Ok(()),
        }
    }

    pub(crate) fn backend(&self) -> Backend {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(..) => Backend::Sqlite,
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => Backend::Postgres,
        }
    }

    pub(crate) async fn close(&self) {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(d) => {
                d.relaxed.close().await;
                d.pool.close().await;
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(d) => {
                d.relaxed.close().await;
                d.pool.close().await;
            }
        }
    }
}
