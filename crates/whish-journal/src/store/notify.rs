//! The status changes handed on once (`crate::status`): claimed, delivered, released.

use super::*;

impl Db {
    /// Claim (subject, status) for delivery: true when it was never recorded, or recorded but
    /// not delivered and its claim older than `lease_ms` by the clock leases are judged by (one
    /// clock for every receiver: a process whose clock runs ahead cannot take a live claim).
    pub(crate) async fn claim(
        &self,
        subject: &str,
        status: &str,
        lease_ms: i64,
    ) -> Result<bool, JournalError> {
        let now = self.lease_now(4);
        let clock = self.lease_clock();
        let sql = format!(
            "INSERT INTO whish_journal_notifications \
             (subject, status, recorded_ms, delivered_ms) VALUES ($1, $2, {now}, NULL) \
             ON CONFLICT (subject, status) DO UPDATE SET recorded_ms = excluded.recorded_ms \
             WHERE whish_journal_notifications.delivered_ms IS NULL \
               AND whish_journal_notifications.recorded_ms < {now} - $3"
        );
        let _turn = self.turn().await;
        on_db!(self, pool => {
            let q = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(subject)
                .bind(status)
                .bind(lease_ms);
            let done = match clock { Some(c) => q.bind(c), None => q }
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
