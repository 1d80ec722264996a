//! The statements that must cost in proportion to the open entries read an index and never the
//! final rows (EXPLAIN, on a real SQLite file and, when `WHISH_TEST_POSTGRES_URL` names a
//! server, a fresh PostgreSQL database); the sync of relaxed writes; the unknown states found in
//! every gap between the known ones.

use super::*;

/// A SQLite journal in a fresh folder.
pub(super) async fn sqlite(test: &str) -> Db {
    let dir = std::env::temp_dir().join(format!("whish-journal-{test}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    Db::open_sqlite(&dir.join("journal.sqlite"), false)
        .await
        .expect("open")
}

/// A PostgreSQL journal in a fresh database, when a server is given.
#[cfg(feature = "postgres")]
pub(super) async fn postgres() -> Option<Db> {
    let admin = match std::env::var("WHISH_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            eprintln!("PostgreSQL part NOT RUN: WHISH_TEST_POSTGRES_URL is not set");
            return None;
        }
    };
    let url = whish_testkit::fresh_postgres_database(&admin).await;
    Some(Db::open_postgres(&url, false).await.expect("open"))
}

/// `finals` final entries and one open entry of every other state, written with one
/// statement; then the database's statistics.
const BULK: &str = "INSERT INTO whish_journal_entries (service, operation, idem_key, request, \
     state, attempts, created_ms, updated_ms, lease_token) \
     SELECT 'money-transfer', 'send', 'bulk-' || i, $2, \
         CASE WHEN i % 2 = 0 THEN 'accepted' ELSE 'refused' END, 1, i, i, 0 FROM n";
const OPEN: &str = "INSERT INTO whish_journal_entries (service, operation, idem_key, request, \
     state, attempts, created_ms, updated_ms, lease_token) VALUES \
     ('money-transfer', 'send', 'open-1', $1, 'intended', 1, 0, 0, 1), \
     ('money-transfer', 'send', 'open-2', $1, 'may-have-arrived', 1, 0, 0, 1), \
     ('money-transfer', 'send', 'open-3', $1, 'pending', 1, 0, 0, 1), \
     ('money-transfer', 'send', 'open-4', $1, 'needs-operator', 1, 0, 0, 1)";
const NOTES: &str = "INSERT INTO whish_journal_notifications (subject, status, recorded_ms, \
     delivered_ms) SELECT 'transfer:' || i, 'SENT', i, i FROM n";

async fn fill(db: &Db, finals: i64) {
    let body = &b"{}"[..];
    match db {
        Db::Sqlite(d) => {
            let with =
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) ";
            for sql in [BULK, NOTES] {
                sqlx::query(sqlx::AssertSqlSafe(format!("{with}{sql}")))
                    .bind(finals)
                    .bind(body)
                    .execute(&d.pool)
                    .await
                    .expect("bulk");
            }
            sqlx::query(OPEN)
                .bind(body)
                .execute(&d.pool)
                .await
                .expect("open");
        }
        #[cfg(feature = "postgres")]
        Db::Postgres(d) => {
            let with = "WITH n(i) AS (SELECT generate_series(1, $1::BIGINT)) ";
            for sql in [BULK, NOTES] {
                sqlx::query(sqlx::AssertSqlSafe(format!("{with}{sql}")))
                    .bind(finals)
                    .bind(body)
                    .execute(&d.pool)
                    .await
                    .expect("bulk");
            }
            sqlx::query(OPEN)
                .bind(body)
                .execute(&d.pool)
                .await
                .expect("open");
        }
    }
}

async fn analyze(db: &Db) {
    on_db!(db, pool => {
        sqlx::query("ANALYZE").execute(pool).await.expect("analyze");
    });
}

/// The statements to explain, with the index each must read, and their parameters (the last
/// ones are ignored by the statements that take fewer).
fn statements(db: &Db) -> Vec<(&'static str, String, &'static str)> {
    vec![
        (
            "list --open",
            open_list_sql(),
            "whish_journal_entries_state",
        ),
        (
            "listing open",
            listing_sql(true, false),
            "whish_journal_entries_state",
        ),
        (
            "listing of a state",
            listing_sql(false, true),
            "whish_journal_entries_state",
        ),
        (
            "listing open, of a state",
            listing_sql(true, true),
            "whish_journal_entries_state",
        ),
        (
            "claim_open",
            db.claim_open_sql(false, false),
            "whish_journal_entries_state",
        ),
        (
            "claim_open, take over",
            db.claim_open_sql(true, false),
            "whish_journal_entries_state",
        ),
        (
            "claim_open, needs-operator too",
            db.claim_open_sql(false, true),
            "whish_journal_entries_state",
        ),
        (
            "leased_elsewhere",
            db.leased_elsewhere_sql(),
            "whish_journal_entries_state",
        ),
        (
            "unknown_states",
            unknown_states_sql(),
            "whish_journal_entries_state",
        ),
        (
            "prune accepted entries",
            db.prune_entries_sql(State::Accepted),
            "whish_journal_entries_final_updated",
        ),
        (
            "prune refused entries",
            db.prune_entries_sql(State::Refused),
            "whish_journal_entries_final_updated",
        ),
        (
            "prune status changes",
            db.prune_notifications_sql(),
            "whish_journal_notifications_delivered",
        ),
    ]
}

/// How many `$n` parameters a statement takes.
fn parameters(sql: &str) -> usize {
    (1..=9).filter(|n| sql.contains(&format!("${n}"))).count()
}

/// The text parameter `i` of a statement takes, if it is one (the others are numbers).
fn text(name: &str, i: usize) -> Option<&'static str> {
    match (name, i) {
        ("leased_elsewhere", _) => Some("another owner"),
        ("claim_open" | "claim_open, take over" | "claim_open, needs-operator too", 0) => {
            Some("me")
        }
        ("listing of a state" | "listing open, of a state", 0) => Some("pending"),
        ("listing open", 0) => Some(""),
        _ => None,
    }
}

/// The plan of each statement, as text.
async fn plans(db: &Db) -> Vec<(&'static str, &'static str, String)> {
    let mut out = Vec::new();
    for (name, sql, index) in statements(db) {
        let n = parameters(&sql);
        let plan = match db {
            Db::Sqlite(d) => {
                let explain = format!("EXPLAIN QUERY PLAN {sql}");
                let mut q = sqlx::query(sqlx::AssertSqlSafe(explain));
                // Text where a state or owner is expected, numbers elsewhere: SQLite compares
                // either.
                for i in 0..n {
                    q = match text(name, i) {
                        Some(t) => q.bind(t),
                        None => q.bind(1000i64),
                    };
                }
                let rows = q.fetch_all(&d.pool).await.expect("explain");
                rows.iter()
                    .map(|r| r.try_get::<String, _>("detail").expect("detail"))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(d) => {
                let explain = format!("EXPLAIN {sql}");
                let mut q = sqlx::query(sqlx::AssertSqlSafe(explain));
                for i in 0..n {
                    q = match text(name, i) {
                        Some(t) => q.bind(t),
                        None => q.bind(1000i64),
                    };
                }
                let rows = q.fetch_all(&d.pool).await.expect("explain");
                rows.iter()
                    .map(|r| r.try_get::<String, _>(0).expect("plan"))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        };
        out.push((name, index, plan));
    }
    out
}

/// Every statement reads its index, and none reads a table whole.
fn check(backend: &str, plans: &[(&'static str, &'static str, String)]) {
    for (name, index, plan) in plans {
        eprintln!("{backend} {name}:\n{plan}\n");
        let whole = plan.lines().any(|l| {
            let l = l.trim_start_matches(|c: char| !c.is_alphabetic());
            // SQLite: "SCAN whish_journal_..." (a table or a whole index read in order);
            // PostgreSQL: "Seq Scan on whish_journal_...".
            l.starts_with("SCAN whish_journal_") || l.starts_with("Seq Scan on whish_journal_")
        });
        assert!(!whole, "{backend} {name} reads a table whole:\n{plan}");
        let used = plan.lines().any(|l| {
            l.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == *index)
        });
        assert!(used, "{backend} {name} does not read {index}:\n{plan}");
    }
}

#[tokio::test]
async fn the_open_entry_statements_read_an_index_never_the_final_rows_sqlite() {
    let db = sqlite("plans").await;
    fill(&db, 20_000).await;
    // With no statistics (a journal as it is used), then with SQLite's own.
    check("sqlite", &plans(&db).await);
    analyze(&db).await;
    check("sqlite, analyzed", &plans(&db).await);
    db.close().await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn the_open_entry_statements_read_an_index_never_the_final_rows_postgres() {
    let Some(db) = postgres().await else { return };
    fill(&db, 20_000).await;
    // With the statistics autovacuum would gather.
    analyze(&db).await;
    check("postgres", &plans(&db).await);
    db.close().await;
}

/// A row in each gap between the known states (and beyond both ends) is found; no row in a
/// known state is.
#[tokio::test]
async fn unknown_states_are_found_in_every_gap_between_the_known_ones() {
    #[cfg_attr(not(feature = "postgres"), allow(unused_mut))]
    let mut dbs = vec![sqlite("unknown-states").await];
    #[cfg(feature = "postgres")]
    dbs.extend(postgres().await);
    let unknown = [
        "",
        "ACCEPTED",
        "accepte",
        "accepted ",
        "half-done",
        "intended2",
        "mayhave",
        "n",
        "needs-operator-2",
        "paid",
        "pending ",
        "refunded",
        "refused!",
        "zz",
        "état",
    ];
    for db in dbs {
        fill(&db, 50).await;
        for (i, state) in unknown.iter().enumerate() {
            let sql = "INSERT INTO whish_journal_entries (service, operation, idem_key, request, \
                 state, attempts, created_ms, updated_ms, lease_token) \
                 VALUES ('money-transfer', 'send', $1, $2, $3, 1, 0, 0, 0)";
            on_db!(&db, pool => {
                sqlx::query(sql)
                    .bind(format!("odd-{i}"))
                    .bind(&b"{}"[..])
                    .bind(*state)
                    .execute(pool)
                    .await
                    .expect("insert");
            });
        }
        let found = db.unknown_states().await.expect("unknown states");
        let mut states: Vec<&str> = found.iter().map(|(_, _, s)| s.as_str()).collect();
        states.sort_unstable();
        let mut expected = unknown.to_vec();
        expected.sort_unstable();
        assert_eq!(states, expected, "{:?}", db.backend());
        let ids: Vec<i64> = found.iter().map(|(id, _, _)| *id).collect();
        assert!(ids.is_sorted(), "oldest first: {ids:?}");
        db.close().await;
    }
}

/// The sync of relaxed writes: a durable commit that leaves nothing behind, and none when there
/// is nothing to make durable.
#[tokio::test]
async fn sync_makes_relaxed_writes_durable_and_leaves_nothing() {
    #[cfg_attr(not(feature = "postgres"), allow(unused_mut))]
    let mut dbs = vec![sqlite("sync").await];
    #[cfg(feature = "postgres")]
    dbs.extend(postgres().await);
    for db in dbs {
        let unsynced = match &db {
            Db::Sqlite(d) => d.unsynced.clone(),
            #[cfg(feature = "postgres")]
            Db::Postgres(d) => d.unsynced.clone(),
        };
        let request = Request {
            service: Service::MoneyTransfer,
            operation: Operation::Send,
            key: "sync-1",
            context: None,
            body: b"{}",
            target: "test",
        };
        let lease = db
            .insert(&request, "me", 30_000, crate::store::insert_token())
            .await
            .expect("insert")
            .expect("new");
        assert!(!unsynced.take(), "an intent is durable by itself");
        let kept = db
            .finish(
                lease,
                "me",
                State::Accepted,
                &RecordedOutcome::new("accepted"),
                &References::default(),
            )
            .await
            .expect("finish");
        assert!(kept);
        assert!(unsynced.take(), "an outcome is relaxed");
        unsynced.again();
        db.sync().await.expect("sync");
        assert!(!unsynced.take(), "synced");
        db.sync().await.expect("nothing to sync");
        let left: i64 = on_db!(&db, pool => {
            sqlx::query_scalar("SELECT COUNT(*) FROM whish_journal_notifications")
                .fetch_one(pool)
                .await
                .expect("count")
        });
        assert_eq!(left, 0, "the sync leaves no row behind");
        db.close().await;
    }
}

#[test]
fn grouped_statements_take_power_of_two_sizes() {
    assert_eq!(
        (0..=9).map(padded_len).collect::<Vec<_>>(),
        [1, 1, 2, 4, 4, 8, 8, 8, 8, 16]
    );
    let items: Vec<u32> = (0..200).collect();
    let pieces: Vec<&[u32]> = pow2_chunks(&items, 64).collect();
    assert_eq!(
        pieces.iter().map(|p| p.len()).collect::<Vec<_>>(),
        [64, 64, 64, 8]
    );
    // Every item once, in order.
    assert_eq!(pieces.concat(), items);
    assert_eq!(
        pow2_chunks(&items[..7], 64)
            .map(<[u32]>::len)
            .collect::<Vec<_>>(),
        [4, 2, 1]
    );
    assert_eq!(pow2_chunks(&items[..0], 64).count(), 0);
}

/// A lookup of three keys is padded to four (the last key twice): each entry comes back once,
/// and a key not recorded is simply absent.
#[tokio::test]
async fn a_padded_lookup_returns_each_entry_once() {
    let db = sqlite("padded-lookup").await;
    for key in ["k1", "k2"] {
        let request = Request {
            service: Service::MoneyTransfer,
            operation: Operation::Send,
            key,
            context: None,
            body: b"{}",
            target: "test",
        };
        db.insert(&request, "me", 30_000, crate::store::insert_token())
            .await
            .expect("insert");
    }
    let mut keys: Vec<String> = db
        .get_many(Service::MoneyTransfer, Operation::Send, &["k1", "k2", "k3"])
        .await
        .expect("read")
        .into_iter()
        .map(|e| e.key)
        .collect();
    keys.sort();
    assert_eq!(keys, ["k1", "k2"]);
    let twice = db
        .get_many(Service::MoneyTransfer, Operation::Send, &["k3", "k2", "k2"])
        .await
        .expect("read");
    assert_eq!(twice.len(), 1);
}

/// A journal written before the index of the final entries named its states as equalities is
/// brought to it when opened, its entries kept; the index then costs an insert and a state
/// change no temporary table (an `IN` list of three would build one at each), and a prune of
/// each final state still reads it.
#[tokio::test]
async fn a_journal_of_an_earlier_version_gets_the_final_index_by_equalities() {
    let dir = std::env::temp_dir().join(format!("whish-journal-upgrade-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("journal.sqlite");
    {
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true);
        let pool = sqlx::SqlitePool::connect_with(options).await.expect("open");
        for sql in &super::open::SQLITE_MIGRATIONS[..6] {
            sqlx::raw_sql(*sql).execute(&pool).await.expect("migration");
        }
        sqlx::query("PRAGMA user_version = 6")
            .execute(&pool)
            .await
            .expect("version");
        sqlx::query(OPEN)
            .bind(&b"{}"[..])
            .execute(&pool)
            .await
            .expect("entries");
        pool.close().await;
    }
    let db = Db::open_sqlite(&path, false).await.expect("open");
    let d = match &db {
        Db::Sqlite(d) => d,
        #[allow(unreachable_patterns)]
        _ => unreachable!("a SQLite journal"),
    };
    let index: String = sqlx::query_scalar(
        "SELECT sql FROM sqlite_master WHERE name = 'whish_journal_entries_final_updated'",
    )
    .fetch_one(&d.pool)
    .await
    .expect("index");
    assert!(
        index.contains("state = 'accepted' OR state = 'handed-on' OR state = 'refused'")
            && !index.contains(" IN "),
        "{index}"
    );
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM whish_journal_entries")
        .fetch_one(&d.pool)
        .await
        .expect("count");
    assert_eq!(kept, 4);
    for (sql, what) in [
        (
            "EXPLAIN INSERT INTO whish_journal_entries (service, operation, idem_key, request, \
             state, attempts, created_ms, updated_ms) VALUES ('s', 'o', 'k', x'00', 'intended', \
             1, 0, 0)",
            "an insert",
        ),
        (
            "EXPLAIN UPDATE whish_journal_entries SET state = 'accepted' WHERE id = 1",
            "a state change",
        ),
    ] {
        let ops: Vec<String> = sqlx::query(sql)
            .fetch_all(&d.pool)
            .await
            .expect("explain")
            .iter()
            .map(|r| r.try_get::<String, _>("opcode").expect("opcode"))
            .collect();
        assert!(
            !ops.iter().any(|o| o == "OpenEphemeral"),
            "{what} builds a temporary table: {ops:?}"
        );
    }
    check("sqlite, upgraded", &plans(&db).await);
    db.close().await;
}
