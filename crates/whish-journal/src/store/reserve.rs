//! Many intents in one transaction: a reservation's one durable commit.

use std::collections::HashMap;
use std::sync::Arc;

use sqlx::Row;

use super::Request;
use super::{
    Db, Lease, RepeatLock, SameText, closed_on_failure, insert_many_sql, placeholder, pow2_chunks,
    statement_text,
};
use crate::entry::RecordedOutcome;
use crate::{Backend, JournalError, Operation, Service};

/// The most intents one statement of a reservation carries (nine parameters each); a
/// reservation's statements are each a power of two long (see `pow2_chunks`).
const PER_STATEMENT: usize = 64;

/// How the rows of a many-row insert are recorded, beyond the request itself.
#[derive(Clone, Copy)]
enum Recorded<'a> {
    /// `intended`, leased to `owner` for `lease_ms` with token 1: a reservation.
    Leased {
        owner: &'a str,
        lease_ms: i64,
        token: i64,
    },
    /// `refused` with this outcome (JSON), no lease: never sent.
    Unsent { outcome: &'a str },
}

impl Recorded<'_> {
    /// The insert of `n` requests recorded so, on `backend`.
    fn sql(self, backend: Backend, n: usize, now: &str) -> Arc<str> {
        match self {
            Recorded::Leased { .. } => insert_many_sql(backend, n),
            Recorded::Unsent { .. } => statement_text("insert unsent", backend, n, || {
                insert_unsent_sql(n, now, backend == Backend::Sqlite)
            }),
        }
    }
}

impl Db {
    /// Insert every request as `intended`, leased to `owner` for `lease_ms` with `token` (drawn
    /// for this reservation: `insert_token`), in one transaction: the lease of each, or `None` when its key was recorded already (or by an
    /// earlier request of the same call). All or nothing: an error means none was recorded,
    /// unless the commit's answer was lost (the caller treats every request as unsure then).
    ///
    /// `lock`: the repeat check, held by the caller. On PostgreSQL the transaction then runs on
    /// the lock's own session, so that it commits only while the lock is held: a session that
    /// ended (which let the lock go) fails the write instead.
    pub(crate) async fn reserve(
        &self,
        lock: Option<&mut RepeatLock>,
        requests: &[Request<'_>],
        owner: &str,
        lease_ms: i64,
        token: i64,
    ) -> Result<Vec<Option<Lease>>, JournalError> {
        let ids = self
            .insert_requests(
                lock,
                requests,
                Recorded::Leased {
                    owner,
                    lease_ms,
                    token,
                },
            )
            .await?;
        Ok(ids
            .into_iter()
            .map(|id| id.map(|id| Lease { id, token }))
            .collect())
    }

    /// Record every request as never sent (`refused` with `outcome`, no lease, one attempt, as a
    /// reservation given back), in one transaction, unless its key is in the journal already:
    /// for each request, true when this call recorded it, false when the key held an entry
    /// (left as it was). All or nothing, as [`reserve`](Self::reserve).
    pub(crate) async fn record_unsent(
        &self,
        requests: &[Request<'_>],
        outcome: &RecordedOutcome,
    ) -> Result<Vec<bool>, JournalError> {
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        let outcome = serde_json::to_string(outcome).map_err(JournalError::encode)?;
        let ids = self
            .insert_requests(None, requests, Recorded::Unsent { outcome: &outcome })
            .await?;
        Ok(ids.into_iter().map(|id| id.is_some()).collect())
    }

    /// Insert every request, `recorded` so, in one transaction (one commit): the row id of each
    /// request, in order, or `None` when its key was recorded already (or by an earlier request
    /// of the same call). All or nothing. With a PostgreSQL `lock`, on its session (see
    /// [`reserve`](Self::reserve)).
    async fn insert_requests(
        &self,
        lock: Option<&mut RepeatLock>,
        requests: &[Request<'_>],
        recorded: Recorded<'_>,
    ) -> Result<Vec<Option<i64>>, JournalError> {
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.now_sql();
        // SQLite binds anonymous parameters in linear time (see `insert_many_sql`).
        let anonymous = self.backend() == crate::Backend::Sqlite;
        let mut inserted = Inserted::default();
        let _turn = self.turn().await;
        // Insert `$rows` (requests), `recorded` so, on the transaction `$tx`: the id of each row
        // inserted, by key, into `inserted`.
        macro_rules! insert_rows {
            ($tx:expr, $rows:expr) => {
                let (mut service, mut operation, mut target) = (
                    SameText::default(),
                    SameText::default(),
                    SameText::default(),
                );
                let mut constant = SameText::default();
                // A reservation of one kind on SQLite binds what its rows share once.
                let written_shared = {
                    #[cfg(feature = "sqlite")]
                    {
                        match (
                            Shared::of($rows, recorded, self),
                            OnSqlite::sqlite(&mut *$tx),
                        ) {
                            (Some(shared), Some(conn)) => {
                                shared.insert(conn, $rows, &mut inserted).await?;
                                true
                            }
                            _ => false,
                        }
                    }
                    #[cfg(not(feature = "sqlite"))]
                    {
                        false
                    }
                };
                if !written_shared {
                    for chunk in pow2_chunks($rows, PER_STATEMENT) {
                        let sql = recorded.sql(self.backend(), chunk.len(), now);
                        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
                        for r in chunk {
                            q = q
                                .bind(service.of(r.service.as_str()))
                                .bind(operation.of(r.operation.as_str()))
                                .bind(r.key)
                                .bind(r.context)
                                .bind(r.body);
                            q = match recorded {
                                Recorded::Leased {
                                    owner,
                                    lease_ms,
                                    token,
                                } => q.bind(constant.of(owner)).bind(lease_ms).bind(token),
                                Recorded::Unsent { outcome } => q.bind(constant.of(outcome)),
                            };
                            q = q.bind(target.of(r.target));
                        }
                        // The lease clock's parameter, last (SQLite; see `Db::lease_now`).
                        if let (Recorded::Leased { .. }, Some(clock)) =
                            (recorded, self.lease_clock())
                        {
                            q = q.bind(clock);
                        }
                        let rows = q.fetch_all(&mut *$tx).await.map_err(JournalError::write)?;
                        for row in &rows {
                            let get =
                                |c: &str| row.try_get::<&str, _>(c).map_err(JournalError::read);
                            let id = row.try_get::<i64, _>("id").map_err(JournalError::read)?;
                            inserted.add(get("service")?, get("operation")?, get("idem_key")?, id);
                        }
                    }
                }
            };
        }
        // The transaction, on the connection `$conn`.
        macro_rules! insert_all {
            ($conn:expr) => {{
                let mut tx = sqlx::Connection::begin($conn)
                    .await
                    .map_err(JournalError::write)?;
                insert_rows!(tx, requests);
                // A reservation's request whose key holds the same request recorded as never
                // sent (a batch stopped, an intent given back) is recorded afresh, in the same
                // transaction: the old entry goes, a new one (a new id, leased) takes its key.
                // Reopened in place it would keep its old id, which a check that reads the
                // sends recorded since a mark (a payout run's) never reads again.
                // Only the first request of a key may: a second one of the same key is never
                // recorded (as when the key is new), so its entry is never another's.
                if let Recorded::Leased { .. } = recorded {
                    let mut first = std::collections::HashSet::new();
                    let mut forgotten: Vec<(Request<'_>, i64)> = Vec::new();
                    for r in requests {
                        let key = (r.service, r.operation, r.key);
                        if !first.insert(key) || inserted.get(r).is_some() {
                            continue;
                        }
                        let gone = sqlx::query(sqlx::AssertSqlSafe(forget_unsent_sql(anonymous)))
                            .bind(r.service.as_str())
                            .bind(r.operation.as_str())
                            .bind(r.key)
                            .bind(r.body)
                            .bind(r.context)
                            .bind(r.target)
                            .fetch_optional(&mut *tx)
                            .await
                            .map_err(JournalError::write)?;
                        if let Some(gone) = gone {
                            let attempts = gone
                                .try_get::<i64, _>("attempts")
                                .map_err(JournalError::read)?;
                            forgotten.push((*r, attempts));
                        }
                    }
                    let again: Vec<Request<'_>> = forgotten.iter().map(|(r, _)| *r).collect();
                    insert_rows!(tx, &again);
                    // Their attempts go on from the old entries', as a reopened entry's do.
                    let count = if anonymous {
                        "UPDATE whish_journal_entries SET attempts = ? WHERE id = ?"
                    } else {
                        "UPDATE whish_journal_entries SET attempts = $1 WHERE id = $2"
                    };
                    for (r, attempts) in &forgotten {
                        // Its key was freed in this transaction: a row not inserted is a
                        // failure of the whole reservation (nothing of it commits).
                        let Some(id) = inserted.get(r) else {
                            return Err(JournalError::new(
                                crate::JournalErrorKind::Write,
                                format!("the entry of {} could not be recorded afresh", r.key),
                            ));
                        };
                        sqlx::query(count)
                            .bind(attempts + 1)
                            .bind(id)
                            .execute(&mut *tx)
                            .await
                            .map_err(JournalError::write)?;
                    }
                }
                tx.commit().await.map_err(JournalError::write)
            }};
        }
        match (self, lock) {
            #[cfg(feature = "postgres")]
            (Db::Postgres(_), Some(RepeatLock::Session(Some(conn)))) => {
                let written: Result<(), JournalError> = async { insert_all!(&mut *conn) }.await;
                written?;
            }
            _ => on_db!(self, pool => {
                // A connection whose transaction failed is closed, never reused (see `store`).
                closed_on_failure(pool, JournalError::write, async |conn| insert_all!(conn))
                    .await?;
            }),
        }
        // The first request of a key gets its row; a second one of the same key finds it taken.
        Ok(requests.iter().map(|r| inserted.take(r)).collect())
    }
}

/// The rows a many-row insert wrote, by key: by service and operation, then by the key itself
/// (looked up without copying the request's key).
#[derive(Default)]
struct Inserted(HashMap<(Service, Operation), HashMap<String, i64>>);

impl Inserted {
    /// A row the insert returned. A service or operation this version does not name was not
    /// written by it: left out.
    fn add(&mut self, service: &str, operation: &str, key: &str, id: i64) {
        if let (Some(s), Some(o)) = (Service::parse(service), Operation::parse(operation)) {
            self.add_of(s, o, key, id);
        }
    }

    /// A row the insert returned, of a service and operation known.
    fn add_of(&mut self, service: Service, operation: Operation, key: &str, id: i64) {
        self.0
            .entry((service, operation))
            .or_default()
            .insert(key.to_owned(), id);
    }

    /// The id of the row written for `r`'s key.
    fn get(&self, r: &Request<'_>) -> Option<i64> {
        self.0.get(&(r.service, r.operation))?.get(r.key).copied()
    }

    /// The id of the row written for `r`'s key, once: a later request of the same key finds
    /// none.
    fn take(&mut self, r: &Request<'_>) -> Option<i64> {
        self.0.get_mut(&(r.service, r.operation))?.remove(r.key)
    }
}

/// A connection a reservation writes on, as SQLite's when it is one (the statement of a
/// reservation of one kind is SQLite's).
#[cfg(feature = "sqlite")]
trait OnSqlite {
    fn sqlite(&mut self) -> Option<&mut sqlx::SqliteConnection>;
}

#[cfg(feature = "sqlite")]
impl OnSqlite for sqlx::SqliteConnection {
    fn sqlite(&mut self) -> Option<&mut sqlx::SqliteConnection> {
        Some(self)
    }
}

#[cfg(all(feature = "sqlite", feature = "postgres"))]
impl OnSqlite for sqlx::PgConnection {
    fn sqlite(&mut self) -> Option<&mut sqlx::SqliteConnection> {
        None
    }
}

/// What every request of a reservation shares when all are of one service, operation and
/// target (a payout batch's are), on SQLite: bound once a statement ([`insert_shared_sql`])
/// instead of once a row.
///
/// [`insert_shared_sql`]: crate::store::insert_shared_sql
#[cfg(feature = "sqlite")]
#[derive(Clone, Copy)]
struct Shared<'a> {
    service: Service,
    operation: Operation,
    target: &'a str,
    owner: &'a str,
    lease_ms: i64,
    token: i64,
    clock: i64,
}

#[cfg(feature = "sqlite")]
impl<'a> Shared<'a> {
    /// What `requests`, recorded so, share on `db`; `None` when they are of more than one
    /// kind, not a reservation, or not on SQLite.
    fn of(requests: &[Request<'a>], recorded: Recorded<'a>, db: &Db) -> Option<Shared<'a>> {
        let Recorded::Leased {
            owner,
            lease_ms,
            token,
        } = recorded
        else {
            return None;
        };
        let first = requests.first()?;
        // The lease clock is SQLite's (PostgreSQL's statements read the server's).
        let clock = db.lease_clock()?;
        requests
            .iter()
            .all(|r| {
                (r.service, r.operation, r.target) == (first.service, first.operation, first.target)
            })
            .then_some(Shared {
                service: first.service,
                operation: first.operation,
                target: first.target,
                owner,
                lease_ms,
                token,
                clock,
            })
    }

    /// Insert `requests` on `conn`, a statement a chunk: the id of each row inserted, by key,
    /// into `inserted`.
    async fn insert(
        &self,
        conn: &mut sqlx::SqliteConnection,
        requests: &[Request<'_>],
        inserted: &mut Inserted,
    ) -> Result<(), JournalError> {
        for chunk in pow2_chunks(requests, PER_STATEMENT) {
            let rows = self
                .query(chunk)
                .fetch_all(&mut *conn)
                .await
                .map_err(JournalError::write)?;
            for row in &rows {
                let id = row.try_get::<i64, _>(0).map_err(JournalError::read)?;
                let key = row.try_get::<&str, _>(1).map_err(JournalError::read)?;
                inserted.add_of(self.service, self.operation, key, id);
            }
        }
        Ok(())
    }

    /// The insert of `chunk`, its rows' key, context and body, then what they share.
    fn query<'q>(
        &self,
        chunk: &'q [Request<'q>],
    ) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>
    where
        'a: 'q,
    {
        let sql = crate::store::insert_shared_sql(chunk.len());
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
        for r in chunk {
            q = q.bind(r.key).bind(r.context).bind(r.body);
        }
        q.bind(self.service.as_str())
            .bind(self.operation.as_str())
            .bind(self.owner)
            .bind(self.lease_ms)
            .bind(self.token)
            .bind(self.target)
            .bind(self.clock)
    }
}

/// The delete of one request's entry while it is recorded as never sent (`refused`, outcome
/// `not-sent`, no lease) with the same bytes, context and service: six parameters (service,
/// operation, key, body, context, target); returns its id and attempts when it was there.
fn forget_unsent_sql(anonymous: bool) -> String {
    let p = |n: usize| placeholder(n, anonymous);
    let same_context = if anonymous {
        "context IS"
    } else {
        "context IS NOT DISTINCT FROM"
    };
    format!(
        "DELETE FROM whish_journal_entries \
         WHERE service = {} AND operation = {} AND idem_key = {} AND request = {} \
           AND {same_context} {} AND (target IS NULL OR target = {}) \
           AND state = 'refused' AND outcome LIKE '%\"result\":\"not-sent\"%' \
           AND lease_owner IS NULL \
         RETURNING id, attempts",
        p(1),
        p(2),
        p(3),
        p(4),
        p(5),
        p(6)
    )
}

/// The insert of `n` requests recorded as never sent: for each, seven parameters (service,
/// operation, key, context, body, outcome, target); returns the id and key of each row inserted.
fn insert_unsent_sql(n: usize, now: &str, anonymous: bool) -> String {
    let values: Vec<String> = (0..n)
        .map(|i| {
            let p = |k: usize| placeholder(i * 7 + k, anonymous);
            format!(
                "({}, {}, {}, {}, {}, 'refused', 1, {now}, {now}, {}, 1, {})",
                p(1),
                p(2),
                p(3),
                p(4),
                p(5),
                p(6),
                p(7)
            )
        })
        .collect();
    format!(
        "INSERT INTO whish_journal_entries \
         (service, operation, idem_key, context, request, state, attempts, created_ms, \
          updated_ms, outcome, lease_token, target) VALUES {} \
         ON CONFLICT (service, operation, idem_key) DO NOTHING \
         RETURNING id, service, operation, idem_key",
        values.join(", ")
    )
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    //! A reservation on a real SQLite file: of one kind (what the rows share bound once) or of
    //! several (each row binding its own), the same rows are written and answered.

    use super::*;

    fn request<'a>(key: &'a str, target: &'a str) -> Request<'a> {
        Request {
            service: Service::MoneyTransfer,
            operation: Operation::Send,
            key,
            context: Some("ctx"),
            body: b"{\"amount\":1}",
            target,
        }
    }

    #[tokio::test]
    async fn a_reservation_of_one_kind_or_of_several_writes_and_answers_the_same_rows() {
        for targets in [["a", "a", "a", "a"], ["a", "b", "a", "b"]] {
            let db = crate::store::tests::sqlite("reserve-kinds").await;
            // Recorded before: its key is found taken.
            db.reserve(None, &[request("k3", targets[3])], "earlier", 30_000, 7)
                .await
                .expect("earlier");
            let requests = [
                request("k1", targets[0]),
                request("k2", targets[1]),
                request("k1", targets[2]),
                request("k3", targets[3]),
            ];
            let leases = db
                .reserve(None, &requests, "me", 30_000, 42)
                .await
                .expect("reserve");
            let ids: Vec<Option<i64>> = leases.iter().map(|l| l.map(|l| l.id)).collect();
            assert!(ids[0].is_some() && ids[1].is_some(), "{targets:?}: {ids:?}");
            assert_eq!(
                ids[2..],
                [None, None],
                "{targets:?}: a key twice, a key taken"
            );
            assert!(leases.iter().flatten().all(|l| l.token == 42));
            let d = match &db {
                Db::Sqlite(d) => d,
                #[allow(unreachable_patterns)]
                _ => unreachable!("a SQLite journal"),
            };
            for (i, request) in requests[..2].iter().enumerate() {
                let row = sqlx::query(
                    "SELECT service, operation, idem_key, context, request, state, lease_owner, \
                     lease_token, target, lease_until_ms > created_ms AS leased \
                     FROM whish_journal_entries WHERE id = ?",
                )
                .bind(ids[i])
                .fetch_one(&d.pool)
                .await
                .expect("row");
                let text = |c: &str| row.try_get::<String, _>(c).expect("text");
                assert_eq!(
                    (
                        text("service"),
                        text("operation"),
                        text("idem_key"),
                        text("context"),
                        text("state"),
                        text("lease_owner"),
                        text("target"),
                    ),
                    (
                        "money-transfer".to_owned(),
                        "send".to_owned(),
                        request.key.to_owned(),
                        "ctx".to_owned(),
                        "intended".to_owned(),
                        "me".to_owned(),
                        request.target.to_owned(),
                    ),
                    "{targets:?}"
                );
                assert_eq!(
                    row.try_get::<Vec<u8>, _>("request").expect("body"),
                    request.body
                );
                assert_eq!(row.try_get::<i64, _>("lease_token").expect("token"), 42);
                assert!(row.try_get::<bool, _>("leased").expect("leased"));
            }
            db.close().await;
        }
    }
}
