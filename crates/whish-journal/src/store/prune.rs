//! Deleting what is final and old: entries, and delivered status changes.

use super::*;

/// The most rows one statement of [`Db::prune`] deletes.
pub(crate) const PRUNE_BATCH: i64 = 1000;

impl Db {
    /// Delete at most `$2` entries in the final `state` last changed before `$1` (ms), oldest
    /// first. The cutoff is the database's clock read once and bound: a range of the index of
    /// the final entries by `(state, updated_ms)`, read in its order and no further than the
    /// batch (a clock read in the statement would be a filter on every final row). The
    /// condition `state IN (...)` is the index's own, so that the database may use it.
    ///
    /// A refusal whose code asks for a retry under a new key ([`crate::RETRY_UNDER_NEW_KEY`])
    /// is kept: the outcome is JSON text, matched on its `"code":"..."` member (the codes are
    /// this crate's constants).
    pub(super) fn prune_entries_sql(&self, state: State) -> String {
        let kept: String = if state == State::Refused {
            // Kept: the refusals a later attempt of the same row is found through, and the
            // entries a person abandoned (nothing at the service stops their key from being
            // sent again by a batch run after they are gone).
            let not: Vec<String> = crate::RETRY_UNDER_NEW_KEY
                .iter()
                .map(|code| format!("outcome NOT LIKE '%\"code\":\"{code}\"%'"))
                .chain(std::iter::once(format!(
                    "outcome NOT LIKE '%\"result\":\"{}\"%'",
                    crate::entry::ABANDONED
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
    pub(super) fn prune_notifications_sql(&self) -> String {
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

    /// Delete final entries (and delivered status changes) last changed more than `age_ms` ago
    /// by the database's clock, [`PRUNE_BATCH`] rows a statement, so that no statement holds the
    /// write lock for long (other writers, the sends among them, go between two batches).
    pub(crate) async fn prune(&self, age_ms: i64) -> Result<u64, JournalError> {
        let before = self.now().await?.saturating_sub(age_ms);
        let mut batches: Vec<(String, bool)> = [State::Accepted, State::Refused, State::HandedOn]
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
}
