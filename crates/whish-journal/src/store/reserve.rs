//! Many intents in one transaction: a reservation's one durable commit.

use std::collections::HashMap;

use sqlx::Row;

use super::{Db, Lease, closed_on_failure, insert_many_sql, placeholder, pow2_chunks};
use crate::JournalError;
use crate::entry::Outcome;
use crate::journaled::Request;

/// The most intents one statement of a reservation carries (seven parameters each); a
/// reservation's statements are each a power of two long (see `pow2_chunks`).
const PER_STATEMENT: usize = 64;

impl Db {
    /// Insert every request as `intended`, leased to `owner` for `lease_ms` with token 1, in one
    /// transaction: the lease of each, or `None` when its key was recorded already (or by an
    /// earlier request of the same call). All or nothing: an error means none was recorded,
    /// unless the commit's answer was lost (the caller treats every request as unsure then).
    pub(crate) async fn reserve(
        &self,
        requests: &[Request<'_>],
        owner: &str,
        lease_ms: i64,
    ) -> Result<Vec<Option<Lease>>, JournalError> {
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.now_sql();
        // SQLite binds anonymous parameters in linear time (see `insert_many_sql`).
        let anonymous = self.backend() == crate::Backend::Sqlite;
        let mut inserted: HashMap<(String, String, String), i64> = HashMap::new();
        let _turn = self.turn().await;
        on_db!(self, pool => {
            // A connection whose transaction failed is closed, never reused (see `store`).
            closed_on_failure(pool, JournalError::write, async |conn| {
                let mut tx = sqlx::Connection::begin(conn).await.map_err(JournalError::write)?;
                for chunk in pow2_chunks(requests, PER_STATEMENT) {
                    let mut q = sqlx::query(sqlx::AssertSqlSafe(insert_many_sql(chunk.len(), now, anonymous)));
                    for r in chunk {
                        q = q
                            .bind(r.service.as_str())
                            .bind(r.operation.as_str())
                            .bind(r.key)
                            .bind(r.context)
                            .bind(r.body)
                            .bind(owner)
                            .bind(lease_ms);
                    }
                    let rows = q.fetch_all(&mut *tx).await.map_err(JournalError::write)?;
                    for row in &rows {
                        let get = |c: &str| row.try_get::<String, _>(c).map_err(JournalError::read);
                        let id = row.try_get::<i64, _>("id").map_err(JournalError::read)?;
                        inserted.insert((get("service")?, get("operation")?, get("idem_key")?), id);
                    }
                }
                tx.commit().await.map_err(JournalError::write)
            })
            .await?;
        });
        // The first request of a key gets its row; a second one of the same key finds it taken.
        Ok(requests
            .iter()
            .map(|r| {
                inserted
                    .remove(&(
                        r.service.as_str().to_owned(),
                        r.operation.as_str().to_owned(),
                        r.key.to_owned(),
                    ))
                    .map(|id| Lease { id, token: 1 })
            })
            .collect())
    }
}

impl Db {
    /// Record every request as never sent (`refused` with `outcome`, no lease, one attempt, as a
    /// reservation given back), in one transaction, unless its key is in the journal already:
    /// for each request, true when this call recorded it, false when the key held an entry
    /// (left as it was). All or nothing, as [`reserve`](Self::reserve).
    pub(crate) async fn record_unsent(
        &self,
        requests: &[Request<'_>],
        outcome: &Outcome,
    ) -> Result<Vec<bool>, JournalError> {
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        let outcome = serde_json::to_string(outcome).map_err(JournalError::encode)?;
        let now = self.now_sql();
        let anonymous = self.backend() == crate::Backend::Sqlite;
        let mut inserted: HashMap<(String, String, String), ()> = HashMap::new();
        let _turn = self.turn().await;
        on_db!(self, pool => {
            // A connection whose transaction failed is closed, never reused (see `store`).
            closed_on_failure(pool, JournalError::write, async |conn| {
                let mut tx = sqlx::Connection::begin(conn).await.map_err(JournalError::write)?;
                for chunk in pow2_chunks(requests, PER_STATEMENT) {
                    let mut q = sqlx::query(sqlx::AssertSqlSafe(insert_unsent_sql(chunk.len(), now, anonymous)));
                    for r in chunk {
                        q = q
                            .bind(r.service.as_str())
                            .bind(r.operation.as_str())
                            .bind(r.key)
                            .bind(r.context)
                            .bind(r.body)
                            .bind(&outcome);
                    }
                    let rows = q.fetch_all(&mut *tx).await.map_err(JournalError::write)?;
                    for row in &rows {
                        let get = |c: &str| row.try_get::<String, _>(c).map_err(JournalError::read);
                        inserted.insert((get("service")?, get("operation")?, get("idem_key")?), ());
                    }
                }
                tx.commit().await.map_err(JournalError::write)
            })
            .await?;
        });
        Ok(requests
            .iter()
            .map(|r| {
                inserted
                    .remove(&(
                        r.service.as_str().to_owned(),
                        r.operation.as_str().to_owned(),
                        r.key.to_owned(),
                    ))
                    .is_some()
            })
            .collect())
    }
}

/// The insert of `n` requests recorded as never sent: for each, six parameters (service,
/// operation, key, context, body, outcome); returns the key of each row inserted.
fn insert_unsent_sql(n: usize, now: &str, anonymous: bool) -> String {
    let values: Vec<String> = (0..n)
        .map(|i| {
            let p = |k: usize| placeholder(i * 6 + k, anonymous);
            format!(
                "({}, {}, {}, {}, {}, 'refused', 1, {now}, {now}, {}, 1)",
                p(1),
                p(2),
                p(3),
                p(4),
                p(5),
                p(6)
            )
        })
        .collect();
    format!(
        "INSERT INTO whish_journal_entries \
         (service, operation, idem_key, context, request, state, attempts, created_ms, \
          updated_ms, outcome, lease_token) VALUES {} \
         ON CONFLICT (service, operation, idem_key) DO NOTHING \
         RETURNING service, operation, idem_key",
        values.join(", ")
    )
}
