//! The steps of an entry's life (`crate::lifecycle`), each one conditional statement: the
//! insert of an intent, the settlement of a lost insert, the takes, renewals and releases of a
//! lease, the outcome, the claims of recovery, the move to the operator.

use super::*;

impl Db {
    /// This process's write turn on a SQLite file (see the `group` module): every write takes
    /// it, so that the process's own writes never meet SQLite's busy wait. Nothing on
    /// PostgreSQL.
    pub(super) async fn turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(d) => Some(d.writer.turn().await),
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => None,
        }
    }

    /// Ask the writer to write the outcomes it is gathering now, instead of after its moment
    /// of gathering: somebody waits for them. Nothing on PostgreSQL, which writes each at once.
    pub(crate) fn hurry(&self) {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(d) => d.writer.hurry(),
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => {}
        }
    }

    /// Gather the outcomes nobody waits for at most [`LINGER`](crate::store::group::LINGER),
    /// and at most a tenth of `lease`, so that the gathering never takes a lease's worth of
    /// time (an outcome written after its lease was taken over is refused by its token, and
    /// the entry is the taker's). Nothing on PostgreSQL, which writes each at once.
    pub(crate) fn gather_outcomes_within(&self, lease: std::time::Duration) {
        #[cfg(not(feature = "sqlite"))]
        let _ = lease;
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(d) => d
                .writer
                .set_linger(crate::store::group::LINGER.min(lease / 10)),
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => {}
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
                    let job = crate::store::group::Job {
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
    pub(super) async fn insert_one(
        &self,
        request: &Request<'_>,
        owner: &str,
        lease_ms: i64,
        token: i64,
    ) -> Result<Option<Lease>, JournalError> {
        self.insert_as(request, owner, lease_ms, token, State::Intended)
            .await
    }

    /// The inbox: record a change (`request`: its key and what finishing it needs) as
    /// `waiting`, leased to `owner` with `token`, in one durable statement; `None` when it was
    /// recorded before (a redelivery).
    pub(crate) async fn record(
        &self,
        request: &Request<'_>,
        owner: &str,
        lease_ms: i64,
        token: i64,
    ) -> Result<Option<Lease>, JournalError> {
        let _turn = self.turn().await;
        self.insert_as(request, owner, lease_ms, token, State::Waiting)
            .await
    }

    /// The inbox: lease up to `limit` changes after id `after` that wait to be handed on (and
    /// those waiting for a person, with `needs_operator`) whose lease is free or has run out.
    pub(crate) async fn take_waiting(
        &self,
        owner: &str,
        lease_ms: i64,
        after: i64,
        limit: i64,
        needs_operator: bool,
        service: Option<crate::entry::Service>,
    ) -> Result<Vec<Claimed>, JournalError> {
        let sql = self.take_waiting_sql(needs_operator, service);
        self.claim_rows(sql, owner, lease_ms, after, limit).await
    }

    /// One insert of an entry in `state`, leased.
    async fn insert_as(
        &self,
        request: &Request<'_>,
        owner: &str,
        lease_ms: i64,
        token: i64,
        state: State,
    ) -> Result<Option<Lease>, JournalError> {
        let sql = insert_sql(self.now_sql(), &self.lease_now(10), state);
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
        outcome: &RecordedOutcome,
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
    #[cfg_attr(not(all(test, feature = "sqlite")), allow(dead_code))]
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
        outcome: &RecordedOutcome,
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
                    let finish = crate::store::group::Finish {
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
        outcome: &RecordedOutcome,
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
            let finish = crate::store::group::Finish {
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
    pub(super) async fn finish_one(
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
        self.claim_rows(sql, owner, lease_ms, after, limit).await
    }

    /// Run a statement of [`claim_sql`](Self::claim_sql)'s shape: the rows it leased, by id.
    async fn claim_rows(
        &self,
        sql: String,
        owner: &str,
        lease_ms: i64,
        after: i64,
        limit: i64,
    ) -> Result<Vec<Claimed>, JournalError> {
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
        self.lease_one_in(id, owner, lease_ms, claimable(needs_operator))
            .await
    }

    /// The inbox's change `id`, waiting or escalated, leased if its lease is free or expired
    /// (lifecycle: take a waiting change, on a person's word).
    pub(crate) async fn take_one_waiting(
        &self,
        id: i64,
        owner: &str,
        lease_ms: i64,
    ) -> Result<Option<Claimed>, JournalError> {
        self.lease_one_in(id, owner, lease_ms, takeable(true)).await
    }

    /// Lease entry `id` if it is in `states` and its lease is free or expired.
    async fn lease_one_in(
        &self,
        id: i64,
        owner: &str,
        lease_ms: i64,
        states: &str,
    ) -> Result<Option<Claimed>, JournalError> {
        let now = self.lease_now(4);
        let clock = self.lease_clock();
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
        let mut outcome = RecordedOutcome::new(crate::entry::UNREADABLE);
        outcome.message = Some(reason.to_owned());
        self.mark_needs_operator(lease, owner, &outcome).await
    }

    /// Move an entry this process holds to `needs-operator`.
    /// A failed hand-on of an inbox change: it stays `waiting` with `outcome`, and its lease
    /// is kept until `backoff_ms` from now (lifecycle: defer). Only the holder of the current
    /// token writes: false when the lease was lost.
    pub(crate) async fn defer(
        &self,
        lease: Lease,
        owner: &str,
        outcome: &RecordedOutcome,
        backoff_ms: i64,
    ) -> Result<bool, JournalError> {
        let updated = self.now_sql();
        let now = self.lease_now(6);
        let clock = self.lease_clock();
        let sql = format!(
            "UPDATE whish_journal_entries \
             SET state = 'waiting', outcome = $3, updated_ms = {updated}, \
                 lease_until_ms = {now} + $5 \
             WHERE id = $1 AND lease_owner = $2 AND lease_token = $4"
        );
        let outcome = serde_json::to_string(outcome).map_err(JournalError::encode)?;
        let _turn = self.turn().await;
        on_relaxed!(self, pool => {
            let q = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(lease.id)
                .bind(owner)
                .bind(&outcome)
                .bind(lease.token)
                .bind(backoff_ms);
            let done = match clock { Some(c) => q.bind(c), None => q }
                .execute(pool)
                .await
                .map_err(JournalError::write)?;
            Ok(done.rows_affected() == 1)
        })
    }

    pub(crate) async fn mark_needs_operator(
        &self,
        lease: Lease,
        owner: &str,
        outcome: &RecordedOutcome,
    ) -> Result<bool, JournalError> {
        let now = self.now_sql();
        let sql = format!(
            "UPDATE whish_journal_entries \
             SET state = CASE WHEN state IN ('waiting', 'escalated') THEN 'escalated' \
                              ELSE 'needs-operator' END, \
                 outcome = $3, updated_ms = {now}, \
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
}
