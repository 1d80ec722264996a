//! The two backends behind one set of statements. The SQL is written once: both SQLite and
//! PostgreSQL read `$1`-style parameters, `ON CONFLICT` and `RETURNING`; only the row lease of
//! a recovery differs (`FOR UPDATE SKIP LOCKED` on PostgreSQL; SQLite has one writer).
//!
//! **A write is read to its end** (`fetch_all`, `execute`), never with `fetch_optional` or
//! `fetch_one`. A write outside a transaction commits when its statement finishes; with
//! `RETURNING`, SQLite makes its changes at the first step, and sqlx's `fetch_optional` stops
//! there and resets the statement, ignoring what the reset returns. On a full disk that reset's
//! commit failed and was rolled back, and the write was reported done: an intent reported
//! recorded was not, and its request was sent (found by the seventh review, on a small tmpfs).
//!
//! **A connection whose write transaction failed is closed**, never returned to the pool. What
//! we saw on a full disk: a run that hung, and intents reported recorded, sent, and absent from
//! the file after the process was killed. How, as read from SQLite's documentation and sqlx's
//! source: on SQLITE_FULL (and I/O errors) SQLite may roll the whole transaction back by itself; sqlx's
//! ROLLBACK then fails, it still counts the transaction open, and the next `begin` on that
//! connection is a SAVEPOINT whose failed commit is undone with `ROLLBACK TO`, which leaves the
//! transaction open. That connection, back in the pool, held the write lock (every other write
//! waited out the busy timeout: a run hung) and took the next writes into a transaction never
//! committed (intents reported recorded, sent, and lost with the process). Closing the
//! connection rolls back whatever it held.

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

use crate::entry::{Entry, Operation, Outcome, References, Service, State};
use crate::error::JournalError;
use crate::journaled::Request;

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
    writer: crate::group::Writer,
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

/// The table that records which of the journal's migrations ran. Its own name, so that a
/// PostgreSQL database shared with the application's own sqlx migrations keeps them apart.
#[cfg(feature = "postgres")]
const MIGRATIONS_TABLE: &str = "whish_journal_migrations";

#[cfg(feature = "postgres")]
fn migrator(sqls: &[(&'static str, &'static str)]) -> Migrator {
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
const POSTGRES_MIGRATIONS: &[(&str, &str)] = &[
    (
        "entries",
        include_str!("../migrations/postgres/0001_entries.sql"),
    ),
    (
        "fencing",
        include_str!("../migrations/postgres/0002_fencing.sql"),
    ),
    (
        "unknown-states",
        include_str!("../migrations/postgres/0003_unknown_states.sql"),
    ),
    (
        "prune-and-ranges",
        include_str!("../migrations/postgres/0004_prune_and_ranges.sql"),
    ),
    (
        "target",
        include_str!("../migrations/postgres/0005_target.sql"),
    ),
];

/// The SQLite migrations, in order; `PRAGMA user_version` records how many ran.
#[cfg(feature = "sqlite")]
const SQLITE_MIGRATIONS: &[&str] = &[
    include_str!("../migrations/sqlite/0001_entries.sql"),
    include_str!("../migrations/sqlite/0002_fencing.sql"),
    include_str!("../migrations/sqlite/0003_unknown_states.sql"),
    include_str!("../migrations/sqlite/0004_prune_and_ranges.sql"),
    include_str!("../migrations/sqlite/0005_target.sql"),
];

/// Bring a SQLite journal up to date under `BEGIN IMMEDIATE`, the database's write lock: two
/// processes opening a new file at once run the migrations once (sqlx's migrator takes no lock
/// on SQLite, and the second process failed with "table already exists"; CI found it).
#[cfg(feature = "sqlite")]
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
#[cfg(feature = "sqlite")]
fn is_busy(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|c| matches!(c.as_ref(), "5" | "261" | "517"))
}

pub(crate) fn time_of(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// The most rows one statement of [`Db::prune`] deletes.
pub(crate) const PRUNE_BATCH: i64 = 1000;

pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// SQLite's clock in epoch milliseconds, as SQL: the wall clock of the process running the
/// statement (creation and update times, the deadline, prune).
#[cfg(feature = "sqlite")]
const SQLITE_NOW: &str = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";

/// PostgreSQL's clock in epoch milliseconds, as SQL.
#[cfg(feature = "postgres")]
const POSTGRES_NOW: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

/// The clock a SQLite journal's leases are judged by, in epoch milliseconds: the kernel's boot
/// time (`btime` of `/proc/stat`) plus the time since boot (`/proc/uptime`). Every process of
/// the machine reads the same value, and none can move it for itself (`faketime`, a container
/// with its own idea of the time, a clock set wrong in one process's environment): a
/// recoverer whose clock runs ahead does not take a live lease, nor does a sender whose clock
/// runs behind write one that looks run out. Only setting the machine's clock moves it, for
/// every process at once. Where `/proc` cannot be read (not Linux), the process's wall clock.
#[cfg(feature = "sqlite")]
pub(crate) fn lease_clock_ms() -> i64 {
    kernel_clock_ms().unwrap_or_else(|| {
        let now = time::OffsetDateTime::now_utc();
        (now.unix_timestamp_nanos() / 1_000_000) as i64
    })
}

#[cfg(feature = "sqlite")]
fn kernel_clock_ms() -> Option<i64> {
    let uptime = std::fs::read_to_string("/proc/uptime").ok()?;
    let (whole, hundredths) = uptime.split_whitespace().next()?.split_once('.')?;
    let up_ms = whole.parse::<i64>().ok()? * 1000 + hundredths.parse::<i64>().ok()? * 10;
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let btime = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse::<i64>()
        .ok()?;
    Some(btime * 1000 + up_ms)
}

/// The first fencing token of an entry an insert creates: drawn for that insert alone, so that
/// the entry an insert wrote is told apart from every other entry of the same key and owner
/// (another task's send in flight, an earlier send whose outcome was never written) when the
/// insert's answer is lost and its orphan must be found ([`Db::settle_lost_insert`]). At least 2
/// (entries written before tokens were drawn start at 1) and far below `i64::MAX`, so that every
/// later take, which adds one, still grows it.
pub(crate) fn insert_token() -> i64 {
    insert_token_from(uuid::Uuid::new_v4().as_u128() as i64)
}

/// [`insert_token`] from `random` bits (the model checker draws its own).
pub(crate) fn insert_token_from(random: i64) -> i64 {
    if whish_core::lies::on(whish_core::lies::Lie::TokenOneOrphan) {
        return 1;
    }
    (random & ((1 << 40) - 1)) | (1 << 20)
}

/// The insert of an intent: `$1` service, `$2` operation, `$3` key, `$4` context, `$5` body,
/// `$6` owner, `$7` lease in ms, `$8` the insert's token ([`insert_token`]), `$9` the target;
/// returns the id, or no row when the key is recorded already.
fn insert_sql(now: &str, lease_now: &str) -> String {
    format!(
        "INSERT INTO whish_journal_entries \
         (service, operation, idem_key, context, request, state, attempts, created_ms, \
          updated_ms, lease_owner, lease_until_ms, lease_token, target) \
         VALUES ($1, $2, $3, $4, $5, 'intended', 1, {now}, {now}, $6, {lease_now} + $7, $8, $9) \
         ON CONFLICT (service, operation, idem_key) DO NOTHING RETURNING id"
    )
}

/// The insert of `n` intents in one statement: for each, nine parameters as in
/// [`insert_sql`], in order, then the lease clock's parameter if `lease_now` names one; returns the id and key of each row inserted (none for a key
/// recorded already, or by an earlier intent of the same statement). `anonymous`: the
/// parameters as `?` (SQLite: binding a numbered parameter looks its name up in a list, so a
/// statement of hundreds of them binds in quadratic time), else `$1`, `$2`, ...
#[cfg_attr(
    not(any(feature = "money-transfer", feature = "sqlite")),
    allow(dead_code)
)]
pub(crate) fn insert_many_sql(n: usize, now: &str, lease_now: &str, anonymous: bool) -> String {
    let values: Vec<String> = (0..n)
        .map(|i| {
            let p = |k: usize| placeholder(i * 9 + k, anonymous);
            format!(
                "({}, {}, {}, {}, {}, 'intended', 1, {now}, {now}, {}, {lease_now} + {}, {}, {})",
                p(1),
                p(2),
                p(3),
                p(4),
                p(5),
                p(6),
                p(7),
                p(8),
                p(9)
            )
        })
        .collect();
    format!(
        "INSERT INTO whish_journal_entries \
         (service, operation, idem_key, context, request, state, attempts, created_ms, \
          updated_ms, lease_owner, lease_until_ms, lease_token, target) VALUES {} \
         ON CONFLICT (service, operation, idem_key) DO NOTHING \
         RETURNING id, service, operation, idem_key",
        values.join(", ")
    )
}

/// The number of rows a statement of `n` rows is padded to: the next power of two, so that a
/// grouped statement takes one of a few sizes (each prepared once a connection and cached)
/// instead of one of every size (each parsed again).
pub(crate) fn padded_len(n: usize) -> usize {
    n.max(1).next_power_of_two()
}

/// `items` cut into pieces of at most `max` (a power of two), each a power of two long: the
/// statements of many rows then take a few sizes (see [`padded_len`]). Used by reservations,
/// which only the money-transfer client makes.
#[cfg_attr(not(feature = "money-transfer"), allow(dead_code))]
pub(crate) fn pow2_chunks<T>(mut items: &[T], max: usize) -> impl Iterator<Item = &[T]> {
    std::iter::from_fn(move || {
        if items.is_empty() {
            return None;
        }
        let n = items.len().min(max);
        let n = 1 << n.ilog2();
        let (piece, rest) = items.split_at(n);
        items = rest;
        Some(piece)
    })
}

/// The `n`th parameter of a statement whose parameters each appear once, in order.
pub(crate) fn placeholder(n: usize, anonymous: bool) -> String {
    if anonymous {
        "?".to_owned()
    } else {
        format!("${n}")
    }
}

const COLUMNS: &str = "id, service, operation, idem_key, context, request, state, attempts, \
                       created_ms, updated_ms, outcome, refs, lease_owner, lease_until_ms, lease_token, \
                       target";

// The statements that must cost in proportion to the open entries, not to the journal: each
// reads the `(state, id)` index and never the final rows (prune: the index of the final entries
// by `updated_ms`, from the oldest, only what it deletes).
// The tests of this module check it with EXPLAIN on both backends.

/// The open states: those recovery works on.
const OPEN_STATES: &str = "'intended', 'may-have-arrived', 'pending'";

/// The states a recovery claims: the open ones, and `needs-operator` when a person asked for
/// those to be worked again ([`Recovery::retry_needs_operator`](crate::Recovery::retry_needs_operator)).
fn claimable(needs_operator: bool) -> &'static str {
    if needs_operator {
        LISTED_STATES
    } else {
        OPEN_STATES
    }
}

/// What a listing of the open entries shows: the open states and `needs-operator`.
const LISTED_STATES: &str = "'intended', 'may-have-arrived', 'needs-operator', 'pending'";

/// The final states: what prune deletes (as migration 0004's index names them).
const FINAL_STATES: &str = "'accepted', 'refused'";

/// Every entry (`open_only`: the open ones and those waiting for an operator), oldest first, at
/// most `$1`.
fn list_sql(open_only: bool) -> String {
    let only = if open_only {
        format!("WHERE state IN ({LISTED_STATES})")
    } else {
        String::new()
    };
    format!("SELECT {COLUMNS} FROM whish_journal_entries {only} ORDER BY id LIMIT $1")
}

/// A listing, newest first: `$1` the state (or '' for any: the condition is then constant), `$2`
/// the earliest creation time, `$3` the limit.
fn listing_sql(open_only: bool, one_state: bool) -> String {
    let mut conditions = Vec::new();
    if open_only {
        conditions.push(format!("state IN ({LISTED_STATES})"));
    }
    // Parameters in a fixed order; an absent state is bound as '' and not compared (a
    // condition `state = $1` of its own lets the database use the state index).
    conditions.push(if one_state { "state = $1" } else { "$1 = ''" }.to_owned());
    conditions.push("created_ms >= $2".to_owned());
    format!(
        "SELECT {COLUMNS} FROM whish_journal_entries WHERE {} ORDER BY id DESC LIMIT $3",
        conditions.join(" AND ")
    )
}

/// The rows in a state this version does not know, in no order. `state NOT IN (...)` can use
/// no index (it read every row); the unknown states are the gaps between the known ones in their
/// sorted order, each a range of the `(state, id)` index (one SELECT each, in one UNION ALL),
/// all empty in a healthy journal. They name no state of a later version, so they find its
/// states too. (The known states differ in their first letter, so they sort the same under any
/// collation a PostgreSQL database may use; the ranges use the database's own comparison.)
fn unknown_states_sql() -> String {
    let mut known: Vec<&str> = State::ALL.iter().map(|s| s.as_str()).collect();
    known.sort_unstable();
    let mut gaps = Vec::with_capacity(known.len() + 1);
    if let (Some(first), Some(last)) = (known.first(), known.last()) {
        gaps.push(format!("state < '{first}'"));
        for pair in known.windows(2) {
            gaps.push(format!("(state > '{}' AND state < '{}')", pair[0], pair[1]));
        }
        gaps.push(format!("state > '{last}'"));
    }
    // One SELECT a range (SQLite reads an OR of ranges as a scan of the table), and no ORDER BY
    // (SQLite would read a range in id order by scanning the table): the caller sorts the few
    // rows found.
    let selects: Vec<String> = gaps
        .iter()
        .map(|gap| format!("SELECT id, idem_key, state FROM whish_journal_entries WHERE {gap}"))
        .collect();
    selects.join(" UNION ALL ")
}

impl Db {
    /// Lease up to `$4` open entries after id `$3` whose lease is free or expired (or any, to
    /// take them over): `$1` the owner, `$2` the lease in ms, then the lease clock.
    fn claim_open_sql(&self, take_over: bool, needs_operator: bool) -> String {
        let now = self.lease_now(5);
        let states = claimable(needs_operator);
        let expired = if take_over {
            "TRUE".to_owned()
        } else {
            format!("(lease_until_ms IS NULL OR lease_until_ms < {now})")
        };
        let ids = self.ids_in(&format!(
            "SELECT id FROM whish_journal_entries \
             WHERE state IN ({states}) AND id > $3 AND {expired} \
             ORDER BY id LIMIT $4 {}",
            self.skip_locked()
        ));
        format!(
            "UPDATE whish_journal_entries \
             SET lease_owner = $1, lease_until_ms = {now} + $2, attempts = attempts + 1, \
                 lease_token = lease_token + 1 \
             WHERE {ids} \
             RETURNING {COLUMNS}"
        )
    }

    /// The open entries (and those waiting for an operator: another process may be working
    /// them again on a person's word) leased by another owner than `$1`, unexpired.
    fn leased_elsewhere_sql(&self) -> String {
        let now = self.lease_now(2);
        format!(
            "SELECT {COLUMNS} FROM whish_journal_entries \
             WHERE state IN ({LISTED_STATES}) \
               AND lease_owner IS NOT NULL AND lease_owner <> $1 AND lease_until_ms >= {now} \
             ORDER BY id"
        )
    }

    /// On PostgreSQL, lock the rows a subquery selects, skipping those another transaction
    /// holds: two recovering processes never wait for each other. (SQLite has one writer.)
    fn skip_locked(&self) -> &'static str {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(..) => "",
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => "FOR UPDATE SKIP LOCKED",
        }
    }

    /// `id` among the ids a subquery selects, so that each row is found by its key: on
    /// PostgreSQL as an array computed first (`id IN (subquery)` may be planned as a join that
    /// reads the table whole).
    fn ids_in(&self, subquery: &str) -> String {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(..) => format!("id IN ({subquery})"),
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => format!("id = ANY (ARRAY({subquery}))"),
        }
    }

    /// Delete at most `$2` entries in the final `state` last changed before `$1` (ms), oldest
    /// first. The cutoff is the database's clock read once and bound: a range of the index of
    /// the final entries by `(state, updated_ms)`, read in its order and no further than the
    /// batch (a clock read in the statement would be a filter on every final row). The
    /// condition `state IN (...)` is the index's own, so that the database may use it.
    ///
    /// A refusal whose code asks for a retry under a new key ([`crate::RETRY_UNDER_NEW_KEY`])
    /// is kept: the outcome is JSON text, matched on its `"code":"..."` member (the codes are
    /// this crate's constants).
    fn prune_entries_sql(&self, state: State) -> String {
        let kept: String = if state == State::Refused {
            // Kept: the refusals a later attempt of the same row is found through, and the
            // entries a person abandoned (nothing at the service stops their key from being
            // sent again by a batch run after they are gone).
            let not: Vec<String> = crate::RETRY_UNDER_NEW_KEY
                .iter()
                .map(|code| format!("outcome NOT LIKE '%\"code\":\"{code}\"%'"))
                .chain(std::iter::once(format!(
                    "outcome NOT LIKE '%\"result\":\"{}\"%'",
                    crate::ABANDONED
                )))
                .collect();
            format!(" AND (outcome IS NULL OR ({}))", not.join(" AND "))
        } else {
            String::new()
        };
        let ids = self.ids_in(&format!(
            "SELECT id FROM whish_journal_entries \
             WHERE state = '{}' AND state IN ({FINAL_STATES}) AND updated_ms < $1{kept} \
             ORDER BY updated_ms LIMIT $2",
            state.as_str()
        ));
        format!("DELETE FROM whish_journal_entries WHERE {ids}")
    }

    /// Delete at most `$2` status changes delivered before `$1` (ms).
    fn prune_notifications_sql(&self) -> String {
        let select = "FROM whish_journal_notifications WHERE delivered_ms < $1 \
                      ORDER BY delivered_ms LIMIT $2";
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(..) => format!(
                "DELETE FROM whish_journal_notifications WHERE rowid IN (SELECT rowid {select})"
            ),
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => format!(
                "DELETE FROM whish_journal_notifications WHERE ctid = ANY (ARRAY(SELECT ctid {select}))"
            ),
        }
    }
}

/// An entry this process holds: its row and the fencing token of its lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lease {
    pub id: i64,
    pub token: i64,
}

impl Db {
    #[cfg(feature = "sqlite")]
    pub(crate) async fn open_sqlite(
        path: &Path,
        durable_outcomes: bool,
    ) -> Result<Db, JournalError> {
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
                            .connect_with(options.clone().synchronous(SqliteSynchronous::Normal))
                            .await
                            .map_err(JournalError::open)?
                    };
                    let writer =
                        crate::group::Writer::start(pool.clone(), relaxed.clone(), SQLITE_NOW);
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

    /// The database's clock in epoch milliseconds, as SQL: every lease is compared with it,
    /// never with the wall clock of the process that wrote it (hosts disagree; the database is
    /// one clock).
    fn now_sql(&self) -> &'static str {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(..) => SQLITE_NOW,
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => POSTGRES_NOW,
        }
    }

    /// The clock leases are judged by, as SQL, in a statement whose own parameters are
    /// `$1`..`$(k-1)`: PostgreSQL's clock; on SQLite the parameter `$k`, bound to
    /// [`lease_clock_ms`] (SQLite's own clock is the process's, which another process's may
    /// disagree with). Bind [`lease_clock`](Self::lease_clock) last.
    pub(crate) fn lease_now(&self, k: usize) -> String {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(..) => format!("${k}"),
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => POSTGRES_NOW.to_owned(),
        }
    }

    /// The value of [`lease_now`](Self::lease_now)'s parameter, to bind last: SQLite only.
    pub(crate) fn lease_clock(&self) -> Option<i64> {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(..) => Some(lease_clock_ms()),
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => None,
        }
    }

    /// The database's clock, read.
    pub(crate) async fn now(&self) -> Result<i64, JournalError> {
        let sql = format!("SELECT {} AS now", self.now_sql());
        on_db!(self, pool => {
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .fetch_one(pool)
                .await
                .map_err(JournalError::read)?;
            row.try_get::<i64, _>("now").map_err(JournalError::read)
        })
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

    /// This process's write turn on a SQLite file (see the `group` module): every write takes
    /// it, so that the process's own writes never meet SQLite's busy wait. Nothing on
    /// PostgreSQL.
    async fn turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(d) => Some(d.writer.turn().await),
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => None,
        }
    }

    /// Make every relaxed write this process made so far durable (one synchronous commit: on
    /// SQLite its fsync of the write-ahead log covers every earlier commit; on PostgreSQL a
    /// synchronous commit waits for the log to be flushed up to it). Nothing when there was
    /// none since the last time, or when every outcome is durable anyway.
    pub(crate) async fn sync(&self) -> Result<(), JournalError> {
        let unsynced = match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(d) => &d.unsynced,
            #[cfg(feature = "postgres")]
            Db::Postgres(d) => &d.unsynced,
        };
        if !unsynced.take() {
            return Ok(());
        }
        // A row written and deleted in one transaction: a commit that writes (an empty one
        // neither appends to SQLite's log nor flushes PostgreSQL's), and leaves nothing behind.
        const MARK: &str = "INSERT INTO whish_journal_notifications \
            (subject, status, recorded_ms, delivered_ms) VALUES ('whish-journal:sync', $1, 0, 0)";
        const UNMARK: &str = "DELETE FROM whish_journal_notifications WHERE subject = 'whish-journal:sync' AND status = $1";
        let mark = uuid::Uuid::new_v4().to_string();
        let _turn = self.turn().await;
        let done = on_db!(self, pool => {
            closed_on_failure(pool, |e| e, async |conn| {
                let mut tx = sqlx::Connection::begin(conn).await?;
                sqlx::query(MARK).bind(&mark).execute(&mut *tx).await?;
                sqlx::query(UNMARK).bind(&mark).execute(&mut *tx).await?;
                tx.commit().await
            })
            .await
        });
        if done.is_err() {
            unsynced.again();
        }
        done.map_err(JournalError::write)
    }

    /// Insert a new entry for `request`, leased to `owner` for `lease_ms` with `token` (drawn
    /// for this insert: [`insert_token`]); `None` when the key is already recorded. On SQLite, when another write of this process is under
    /// way, through the group-commit writer: concurrent intents share one durable commit.
    pub(crate) async fn insert(
        &self,
        request: &Request<'_>,
        owner: &str,
        lease_ms: i64,
        token: i64,
    ) -> Result<Option<Lease>, JournalError> {
        #[cfg(feature = "sqlite")]
        #[allow(irrefutable_let_patterns)]
        if let Db::Sqlite(d) = self {
            let turn = match d.writer.try_turn() {
                // Nothing else is being written: this intent alone, at once.
                Some(turn) => turn,
                None => {
                    let job = crate::group::Job {
                        service: request.service.as_str(),
                        operation: request.operation.as_str(),
                        key: request.key.to_owned(),
                        context: request.context.map(str::to_owned),
                        body: request.body.to_vec(),
                        owner: owner.to_owned(),
                        lease_ms,
                        token,
                        target: request.target.to_owned(),
                    };
                    match d.writer.insert(job).await {
                        Ok(answer) => return answer,
                        // The writer's runtime is gone: insert here, alone.
                        Err(_) => d.writer.turn().await,
                    }
                }
            };
            let inserted = self.insert_one(request, owner, lease_ms, token).await;
            drop(turn);
            return inserted;
        }
        #[allow(unreachable_code)]
        self.insert_one(request, owner, lease_ms, token).await
    }

    /// One insert, on its own.
    async fn insert_one(
        &self,
        request: &Request<'_>,
        owner: &str,
        lease_ms: i64,
        token: i64,
    ) -> Result<Option<Lease>, JournalError> {
        let sql = insert_sql(self.now_sql(), &self.lease_now(10));
        let clock = self.lease_clock();
        on_db!(self, pool => {
            let q = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(request.service.as_str())
                .bind(request.operation.as_str())
                .bind(request.key)
                .bind(request.context)
                .bind(request.body)
                .bind(owner)
                .bind(lease_ms)
                .bind(token)
                .bind(request.target);
            let row = match clock { Some(c) => q.bind(c), None => q }
                .fetch_all(pool) // to its end: see the module's doc
                .await
                .map_err(JournalError::write)?
                .into_iter()
                .next();
            row.map(|r| r.try_get::<i64, _>("id").map(|id| Lease { id, token }))
                .transpose()
                .map_err(JournalError::read)
        })
    }

    /// After an insert whose answer was lost: record the request as never sent (`refused`,
    /// outcome `not-sent`), so that no recovery ever sends it, whether or not the lost insert
    /// committed. The lost insert's entry is the one still `intended` under `owner` and the
    /// `token` drawn for that insert alone; any other entry of the key (another task's send in
    /// flight, an earlier send of this process) is left as it is, and the answer is false.
    pub(crate) async fn settle_lost_insert(
        &self,
        request: &Request<'_>,
        owner: &str,
        token: i64,
        outcome: &Outcome,
    ) -> Result<bool, JournalError> {
        let now = self.now_sql();
        let outcome = serde_json::to_string(outcome).map_err(JournalError::encode)?;
        let sql = format!(
            "INSERT INTO whish_journal_entries \
             (service, operation, idem_key, context, request, state, attempts, created_ms, \
              updated_ms, outcome, lease_token, target) \
             VALUES ($1, $2, $3, $4, $5, 'refused', 1, {now}, {now}, $6, 1, $9) \
             ON CONFLICT (service, operation, idem_key) DO UPDATE SET state = 'refused', \
                 outcome = excluded.outcome, updated_ms = excluded.updated_ms, \
                 lease_owner = NULL, lease_until_ms = NULL, \
                 lease_token = whish_journal_entries.lease_token + 1 \
             WHERE whish_journal_entries.state = 'intended' \
               AND whish_journal_entries.lease_owner = $7 \
               AND whish_journal_entries.lease_token = $8 \
             RETURNING id"
        );
        let _turn = self.turn().await;
        on_db!(self, pool => {
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(request.service.as_str())
                .bind(request.operation.as_str())
                .bind(request.key)
                .bind(request.context)
                .bind(request.body)
                .bind(&outcome)
                .bind(owner)
                .bind(token)
                .bind(request.target)
                .fetch_all(pool) // to its end: see the module's doc
                .await
                .map_err(JournalError::write)?;
            Ok(!row.is_empty())
        })
    }

    /// Take the lease of an existing entry for another send of the same request, unless another
    /// owner holds an unexpired lease; the token grows. Returns the lease when it was taken.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) async fn take_lease(
        &self,
        id: i64,
        owner: &str,
        lease_ms: i64,
    ) -> Result<Option<Lease>, JournalError> {
        self.take_lease_as(id, owner, lease_ms, false).await
    }

    /// [`take_lease`](Self::take_lease) (never a refused entry); `reopen`: only for an entry
    /// still recorded as never sent (`refused`, `not-sent`), which goes back to `intended`
    /// (open) in the same statement, so that from the moment it may be sent, recovery finishes
    /// it if this process dies. Its creation time becomes now: nothing went out before, so the
    /// request is recorded to go out now (a follow-up's cutoff and a reconciliation's window
    /// read it as the send's time).
    pub(crate) async fn take_lease_as(
        &self,
        id: i64,
        owner: &str,
        lease_ms: i64,
        reopen: bool,
    ) -> Result<Option<Lease>, JournalError> {
        let now = self.now_sql();
        let lease_now = self.lease_now(4);
        let clock = self.lease_clock();
        // Only the entry as the caller read it: another process may have taken it meanwhile,
        // sent it and recorded the service's refusal, which is final and never sent again.
        // Reopened: still recorded as never sent (its outcome's result); taken: not refused.
        let (set, only) = if reopen {
            (
                format!("state = 'intended', outcome = NULL, refs = NULL, created_ms = {now}, "),
                " AND state = 'refused' AND outcome LIKE '%\"result\":\"not-sent\"%'",
            )
        } else {
            (String::new(), " AND state <> 'refused'")
        };
        let sql = format!(
            "UPDATE whish_journal_entries \
             SET {set}lease_owner = $2, lease_until_ms = {lease_now} + $3, attempts = attempts + 1, \
                 updated_ms = {now}, lease_token = lease_token + 1 \
             WHERE id = $1 AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until_ms < {lease_now}){only} \
             RETURNING lease_token"
        );
        let _turn = self.turn().await;
        on_db!(self, pool => {
            let q = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(id)
                .bind(owner)
                .bind(lease_ms);
            let row = match clock { Some(c) => q.bind(c), None => q }
                .fetch_all(pool) // to its end: see the module's doc
                .await
                .map_err(JournalError::write)?
                .into_iter()
                .next();
            row.map(|r| r.try_get::<i64, _>("lease_token").map(|token| Lease { id, token }))
                .transpose()
                .map_err(JournalError::read)
        })
    }

    /// Renew a lease this process holds (a heartbeat while its call is in flight). False when
    /// the lease is no longer this process's: another took the entry over.
    pub(crate) async fn renew(
        &self,
        lease: Lease,
        owner: &str,
        lease_ms: i64,
    ) -> Result<bool, JournalError> {
        let now = self.lease_now(5);
        let clock = self.lease_clock();
        let sql = format!(
            "UPDATE whish_journal_entries SET lease_until_ms = {now} + $3 \
             WHERE id = $1 AND lease_owner = $2 AND lease_token = $4"
        );
        let _turn = self.turn().await;
        on_relaxed!(self, pool => {
            let q = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(lease.id)
                .bind(owner)
                .bind(lease_ms)
                .bind(lease.token);
            let done = match clock { Some(c) => q.bind(c), None => q }
                .execute(pool)
                .await
                .map_err(JournalError::write)?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Record where an entry stands, and release its lease. Only the holder of the current
    /// token writes: false when the lease was lost (nothing written). On SQLite, when another
    /// write of this process is under way, through the group-commit writer.
    pub(crate) async fn finish(
        &self,
        lease: Lease,
        owner: &str,
        state: State,
        outcome: &Outcome,
        refs: &References,
    ) -> Result<bool, JournalError> {
        let outcome = serde_json::to_string(outcome).map_err(JournalError::encode)?;
        let refs = serde_json::to_string(refs).map_err(JournalError::encode)?;
        #[cfg(feature = "sqlite")]
        #[allow(irrefutable_let_patterns)]
        if let Db::Sqlite(d) = self {
            let turn = match d.writer.try_turn() {
                Some(turn) => turn,
                None => {
                    let finish = crate::group::Finish {
                        lease,
                        owner: owner.to_owned(),
                        state: state.as_str(),
                        outcome,
                        refs,
                        done: None,
                    };
                    match d.writer.finish(finish).await {
                        Ok(answer) => {
                            d.unsynced.wrote();
                            return answer;
                        }
                        Err(f) => {
                            let turn = d.writer.turn().await;
                            let done = self
                                .finish_one(lease, owner, state, &f.outcome, &f.refs)
                                .await;
                            drop(turn);
                            return done;
                        }
                    }
                }
            };
            let done = self.finish_one(lease, owner, state, &outcome, &refs).await;
            drop(turn);
            return done;
        }
        #[allow(unreachable_code)]
        self.finish_one(lease, owner, state, &outcome, &refs).await
    }

    /// Record an outcome nobody waits for (its call returned already): on SQLite, handed to
    /// the writer, which gathers such outcomes a moment and writes them together, then gives
    /// `done` up. `Err(done)` when it cannot be handed over (PostgreSQL, or the writer is gone):
    /// the caller writes it with [`finish`](Self::finish).
    pub(crate) fn finish_later(
        &self,
        lease: Lease,
        owner: &str,
        state: State,
        outcome: &Outcome,
        refs: &References,
        done: crate::background::Done,
    ) -> Result<(), crate::background::Done> {
        #[cfg(feature = "sqlite")]
        #[allow(irrefutable_let_patterns)]
        if let Db::Sqlite(d) = self
            && d.writer.on_this_runtime()
        {
            let (Ok(outcome), Ok(refs)) =
                (serde_json::to_string(outcome), serde_json::to_string(refs))
            else {
                return Err(done);
            };
            let finish = crate::group::Finish {
                lease,
                owner: owner.to_owned(),
                state: state.as_str(),
                outcome,
                refs,
                done: Some(done),
            };
            // Counted before it is written: a flush waits for it, then makes it durable.
            d.unsynced.wrote();
            return d
                .writer
                .finish_detached(finish)
                .map_err(|f| f.done.expect("handed over with its place on the list"));
        }
        let _ = (lease, owner, state, outcome, refs);
        Err(done)
    }

    /// One outcome, on its own, on the relaxed pool.
    async fn finish_one(
        &self,
        lease: Lease,
        owner: &str,
        state: State,
        outcome: &str,
        refs: &str,
    ) -> Result<bool, JournalError> {
        let now = self.now_sql();
        let sql = format!(
            "UPDATE whish_journal_entries \
             SET state = $3, outcome = $4, refs = $5, updated_ms = {now}, \
                 lease_owner = NULL, lease_until_ms = NULL \
             WHERE id = $1 AND lease_owner = $2 AND lease_token = $6"
        );
        on_relaxed!(self, pool => {
            let done = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(lease.id)
                .bind(owner)
                .bind(state.as_str())
                .bind(outcome)
                .bind(refs)
                .bind(lease.token)
                .execute(pool)
                .await
                .map_err(JournalError::write)?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Release a lease without changing anything else (an entry left as it was). False when
    /// the lease was not this process's any more.
    pub(crate) async fn release(&self, lease: Lease, owner: &str) -> Result<bool, JournalError> {
        const SQL: &str = "UPDATE whish_journal_entries \
            SET lease_owner = NULL, lease_until_ms = NULL \
            WHERE id = $1 AND lease_owner = $2 AND lease_token = $3";
        let _turn = self.turn().await;
        on_relaxed!(self, pool => {
            let done = sqlx::query(SQL)
                .bind(lease.id)
                .bind(owner)
                .bind(lease.token)
                .execute(pool)
                .await
                .map_err(JournalError::write)?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Free the lease of a holder known to be dead (a process of this host that is gone), so
    /// that recovery takes the entry at once. Conditional on the holder and its token.
    pub(crate) async fn release_dead(
        &self,
        id: i64,
        holder: &str,
        token: i64,
    ) -> Result<bool, JournalError> {
        const SQL: &str = "UPDATE whish_journal_entries \
            SET lease_owner = NULL, lease_until_ms = NULL, lease_token = lease_token + 1 \
            WHERE id = $1 AND lease_owner = $2 AND lease_token = $3";
        let _turn = self.turn().await;
        on_db!(self, pool => {
            let done = sqlx::query(SQL)
                .bind(id)
                .bind(holder)
                .bind(token)
                .execute(pool)
                .await
                .map_err(JournalError::write)?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Lease up to `limit` open entries after `after` (by id) whose lease is free or expired
    /// by the database's clock; each lease's token grows. On PostgreSQL, rows another process
    /// is claiming at this moment are skipped, not waited for (`FOR UPDATE SKIP LOCKED`); on
    /// SQLite the statement runs alone (one writer). A row that cannot be read comes back as
    /// `Err` with its reason, leased like the others.
    pub(crate) async fn claim_open(
        &self,
        owner: &str,
        lease_ms: i64,
        after: i64,
        limit: i64,
        take_over: bool,
        needs_operator: bool,
    ) -> Result<Vec<Claimed>, JournalError> {
        let sql = self.claim_open_sql(take_over, needs_operator);
        let clock = self.lease_clock();
        let _turn = self.turn().await;
        let mut claimed = on_db!(self, pool => {
            let q = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(owner)
                .bind(lease_ms)
                .bind(after)
                .bind(limit);
            let rows = match clock { Some(c) => q.bind(c), None => q }
                .fetch_all(pool)
                .await
                .map_err(JournalError::write)?;
            rows.iter().map(claimed_of).collect::<Result<Vec<_>, _>>()?
        });
        claimed.sort_by_key(|c| c.lease.id);
        Ok(claimed)
    }

    /// Lease one entry by id for recovery, only while it is still open (or waiting for an
    /// operator, with `needs_operator`) and its lease free or expired; the entry as it is now.
    pub(crate) async fn claim_one(
        &self,
        id: i64,
        owner: &str,
        lease_ms: i64,
        needs_operator: bool,
    ) -> Result<Option<Claimed>, JournalError> {
        let now = self.lease_now(4);
        let clock = self.lease_clock();
        let states = claimable(needs_operator);
        let sql = format!(
            "UPDATE whish_journal_entries \
             SET lease_owner = $2, lease_until_ms = {now} + $3, attempts = attempts + 1, \
                 lease_token = lease_token + 1 \
             WHERE id = $1 AND state IN ({states}) \
               AND (lease_until_ms IS NULL OR lease_until_ms < {now}) \
             RETURNING {COLUMNS}"
        );
        let _turn = self.turn().await;
        on_db!(self, pool => {
            let q = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(id)
                .bind(owner)
                .bind(lease_ms);
            let row = match clock { Some(c) => q.bind(c), None => q }
                .fetch_all(pool) // to its end: see the module's doc
                .await
                .map_err(JournalError::write)?
                .into_iter()
                .next();
            row.as_ref().map(claimed_of).transpose()
        })
    }

    /// Send an entry that cannot be read to `needs-operator` with the reason, under the lease
    /// this process holds.
    pub(crate) async fn quarantine(
        &self,
        lease: Lease,
        owner: &str,
        reason: &str,
    ) -> Result<bool, JournalError> {
        let mut outcome = Outcome::new(crate::recover::UNREADABLE);
        outcome.message = Some(reason.to_owned());
        self.mark_needs_operator(lease, owner, &outcome).await
    }

    /// The open entries another owner holds a lease on that has not expired by the database's
    /// clock: recovery cannot take them, and says so. With the holder, the lease's end and its
    /// token.
    pub(crate) async fn leased_elsewhere(&self, owner: &str) -> Result<Vec<Claimed>, JournalError> {
        let sql = self.leased_elsewhere_sql();
        let clock = self.lease_clock();
        on_db!(self, pool => {
            let q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(owner);
            let rows = match clock { Some(c) => q.bind(c), None => q }
                .fetch_all(pool)
                .await
                .map_err(JournalError::read)?;
            rows.iter().map(claimed_of).collect()
        })
    }

    /// Rows whose state this version does not know (recovery never works on them: it says so).
    pub(crate) async fn unknown_states(&self) -> Result<Vec<(i64, String, String)>, JournalError> {
        let sql = unknown_states_sql();
        let mut found = on_db!(self, pool => {
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(pool).await.map_err(JournalError::read)?;
            rows.iter()
                .map(|r| {
                    Ok((
                        r.try_get::<i64, _>("id").map_err(JournalError::read)?,
                        r.try_get::<String, _>("idem_key").map_err(JournalError::read)?,
                        r.try_get::<String, _>("state").map_err(JournalError::read)?,
                    ))
                })
                .collect::<Result<Vec<_>, JournalError>>()?
        });
        found.sort_by_key(|(id, _, _)| *id);
        Ok(found)
    }

    /// The entries, and apart from them the rows that cannot be read (id, key, why): one bad
    /// row never hides the others.
    pub(crate) async fn list(
        &self,
        open_only: bool,
        limit: i64,
    ) -> Result<(Vec<Entry>, Vec<(i64, String, String)>), JournalError> {
        let sql = list_sql(open_only);
        on_db!(self, pool => {
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(limit)
                .fetch_all(pool)
                .await
                .map_err(JournalError::read)?;
            let mut good = Vec::new();
            let mut bad = Vec::new();
            for row in &rows {
                let claimed = claimed_of(row)?;
                match claimed.entry {
                    Ok(e) => good.push(e),
                    Err(e) => bad.push((claimed.lease.id, claimed.key, e.to_string())),
                }
            }
            Ok((good, bad))
        })
    }

    /// The entries a listing selects, newest first, each condition a bound parameter.
    pub(crate) async fn listing(
        &self,
        listing: &crate::Listing,
    ) -> Result<Vec<Entry>, JournalError> {
        let sql = listing_sql(listing.open_only, listing.state.is_some());
        let state = listing.state.map_or("", State::as_str);
        let since = listing.since_ms.unwrap_or(i64::MIN);
        on_db!(self, pool => {
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(state)
                .bind(since)
                .bind(i64::from(listing.limit))
                .fetch_all(pool)
                .await
                .map_err(JournalError::read)?;
            let mut good = Vec::new();
            for row in &rows {
                if let Ok(e) = claimed_of(row)?.entry {
                    good.push(e);
                }
            }
            Ok(good)
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

    /// The entries of these keys (of one service and operation), one query.
    pub(crate) async fn get_many(
        &self,
        service: Service,
        operation: Operation,
        keys: &[&str],
    ) -> Result<Vec<Entry>, JournalError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        // Every parameter once, in order: anonymous on SQLite (see `insert_many_sql`). The list
        // is padded to a power of two with its last key again (a key twice matches its row
        // once): a statement of one of a few sizes is prepared once a connection and kept,
        // where one of every size was parsed again each time.
        let anonymous = self.backend() == Backend::Sqlite;
        let padded = padded_len(keys.len());
        let marks: Vec<String> = (0..padded).map(|i| placeholder(i + 3, anonymous)).collect();
        let sql = format!(
            "SELECT {COLUMNS} FROM whish_journal_entries \
             WHERE service = {} AND operation = {} AND idem_key IN ({})",
            placeholder(1, anonymous),
            placeholder(2, anonymous),
            marks.join(", ")
        );
        on_db!(self, pool => {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(service.as_str())
                .bind(operation.as_str());
            for k in keys.iter().chain(std::iter::repeat_n(&keys[keys.len() - 1], padded - keys.len())) {
                q = q.bind(*k);
            }
            let rows = q.fetch_all(pool).await.map_err(JournalError::read)?;
            rows.iter().map(entry_of).collect()
        })
    }

    /// Move an entry this process holds to `needs-operator`.
    pub(crate) async fn mark_needs_operator(
        &self,
        lease: Lease,
        owner: &str,
        outcome: &Outcome,
    ) -> Result<bool, JournalError> {
        let now = self.now_sql();
        let sql = format!(
            "UPDATE whish_journal_entries \
             SET state = 'needs-operator', outcome = $3, updated_ms = {now}, \
                 lease_owner = NULL, lease_until_ms = NULL \
             WHERE id = $1 AND lease_owner = $2 AND lease_token = $4"
        );
        let outcome = serde_json::to_string(outcome).map_err(JournalError::encode)?;
        let _turn = self.turn().await;
        on_relaxed!(self, pool => {
            let done = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(lease.id)
                .bind(owner)
                .bind(&outcome)
                .bind(lease.token)
                .execute(pool)
                .await
                .map_err(JournalError::write)?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Delete final entries (and delivered status changes) last changed more than `age_ms` ago
    /// by the database's clock, [`PRUNE_BATCH`] rows a statement, so that no statement holds the
    /// write lock for long (other writers, the sends among them, go between two batches).
    pub(crate) async fn prune(&self, age_ms: i64) -> Result<u64, JournalError> {
        let before = self.now().await?.saturating_sub(age_ms);
        let mut batches: Vec<(String, bool)> = [State::Accepted, State::Refused]
            .into_iter()
            .map(|s| (self.prune_entries_sql(s), true))
            .collect();
        batches.push((self.prune_notifications_sql(), false));
        let mut pruned = 0u64;
        for (sql, counted) in batches {
            loop {
                // The write turn (and SQLite's lock) for one batch at a time: the sends of this
                // process go between two.
                let _turn = self.turn().await;
                let n = on_db!(self, pool => {
                    sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
                        .bind(before)
                        .bind(PRUNE_BATCH)
                        .execute(pool)
                        .await
                        .map_err(JournalError::write)?
                        .rows_affected()
                });
                if counted {
                    pruned += n;
                }
                if n < PRUNE_BATCH.unsigned_abs() {
                    break;
                }
            }
        }
        Ok(pruned)
    }

    /// Claim (subject, status) for delivery: true when it was never recorded, or recorded but
    /// not delivered and its claim older than `lease_ms` by the database's clock (one clock for
    /// every receiver: a host whose clock runs ahead cannot take a live claim).
    pub(crate) async fn claim(
        &self,
        subject: &str,
        status: &str,
        lease_ms: i64,
    ) -> Result<bool, JournalError> {
        let now = self.now_sql();
        let sql = format!(
            "INSERT INTO whish_journal_notifications \
             (subject, status, recorded_ms, delivered_ms) VALUES ($1, $2, {now}, NULL) \
             ON CONFLICT (subject, status) DO UPDATE SET recorded_ms = excluded.recorded_ms \
             WHERE whish_journal_notifications.delivered_ms IS NULL \
               AND whish_journal_notifications.recorded_ms < {now} - $3"
        );
        let _turn = self.turn().await;
        on_db!(self, pool => {
            let done = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(subject)
                .bind(status)
                .bind(lease_ms)
                .execute(pool)
                .await
                .map_err(JournalError::write)?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Mark (subject, status) delivered: it is never claimed again.
    pub(crate) async fn delivered(&self, subject: &str, status: &str) -> Result<(), JournalError> {
        let sql = format!(
            "UPDATE whish_journal_notifications SET delivered_ms = {} \
             WHERE subject = $1 AND status = $2",
            self.now_sql()
        );
        let _turn = self.turn().await;
        on_db!(self, pool => {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(subject)
                .bind(status)
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
        let _turn = self.turn().await;
        on_db!(self, pool => {
            sqlx::query(SQL).bind(subject).bind(status).execute(pool).await.map_err(JournalError::write)?;
            Ok(())
        })
    }

    /// The statuses recorded for a subject, oldest first.
    #[cfg(feature = "money-transfer")]
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

/// A row recovery leased: its lease, and the entry or why it cannot be read.
#[derive(Debug)]
pub(crate) struct Claimed {
    pub lease: Lease,
    pub key: String,
    pub holder: Option<String>,
    pub until_ms: Option<i64>,
    pub entry: Result<Entry, JournalError>,
}

fn claimed_of<R: Row>(row: &R) -> Result<Claimed, JournalError>
where
    usize: sqlx::ColumnIndex<R>,
    for<'r> &'r str: sqlx::ColumnIndex<R>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Vec<u8>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let id = row.try_get::<i64, _>("id").map_err(JournalError::read)?;
    let token = row
        .try_get::<i64, _>("lease_token")
        .map_err(JournalError::read)?;
    Ok(Claimed {
        lease: Lease { id, token },
        key: row
            .try_get::<String, _>("idem_key")
            .map_err(JournalError::read)?,
        holder: row
            .try_get::<Option<String>, _>("lease_owner")
            .map_err(JournalError::read)?,
        until_ms: row
            .try_get::<Option<i64>, _>("lease_until_ms")
            .map_err(JournalError::read)?,
        entry: entry_of(row),
    })
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
        target: opt("target")?,
    })
}

#[cfg(all(test, feature = "sqlite"))]
mod differential;
#[cfg(feature = "money-transfer")]
mod reserve;
#[cfg(all(test, feature = "sqlite"))]
mod tests;

#[cfg(all(test, feature = "sqlite"))]
impl Db {
    /// The group-commit writer of a SQLite journal.
    pub(crate) fn writer(&self) -> &crate::group::Writer {
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
