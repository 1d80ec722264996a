//! The reads that look at a whole window of the journal, a page at a time: the sends a check
//! for a payment made before reads (only what it needs: the Request-id, the state, the exact
//! body), and the rows this version cannot read.

use super::*;

/// How many rows one page carries: the memory a read holds at once, whatever the journal's
/// size.
pub(crate) const PAGE: i64 = 1000;

/// One send as the check reads it.
pub(crate) struct SendRow {
    pub id: i64,
    pub key: String,
    /// `None`: a state this version does not know. Not counted, as [`Journal::list`] leaves
    /// such rows out ([`Journal::unreadable`] names them).
    ///
    /// [`Journal::list`]: crate::Journal::list
    /// [`Journal::unreadable`]: crate::Journal::unreadable
    pub state: Option<State>,
    pub request: Vec<u8>,
}

impl Db {
    /// The lowest id among the `lookback` most recent entries (of any kind), or `None` when the
    /// journal holds none.
    pub(crate) async fn lookback_floor(&self, lookback: u32) -> Result<Option<i64>, JournalError> {
        const SQL: &str = "SELECT MIN(id) AS floor FROM \
            (SELECT id FROM whish_journal_entries ORDER BY id DESC LIMIT $1) AS recent";
        on_db!(self, pool => {
            let row = sqlx::query(SQL)
                .bind(i64::from(lookback))
                .fetch_one(pool)
                .await
                .map_err(JournalError::read)?;
            row.try_get::<Option<i64>, _>("floor").map_err(JournalError::read)
        })
    }

    /// The highest entry id, or 0 when the journal holds none.
    pub(crate) async fn last_id(&self) -> Result<i64, JournalError> {
        const SQL: &str = "SELECT COALESCE(MAX(id), 0) AS last FROM whish_journal_entries";
        on_db!(self, pool => {
            let row = sqlx::query(SQL).fetch_one(pool).await.map_err(JournalError::read)?;
            row.try_get::<i64, _>("last").map_err(JournalError::read)
        })
    }

    /// The money-transfer sends to `target` (or recorded with none) in the range of ids
    /// `along` names, in its order, at most [`PAGE`].
    pub(crate) async fn sends_page(
        &self,
        target: &str,
        along: Along,
    ) -> Result<Vec<SendRow>, JournalError> {
        // A page is a range of ids, read along the primary key; SQLite would otherwise take
        // the (service, operation, key) index and sort every send of the journal for each
        // page. PostgreSQL's planner takes the primary key by itself.
        let (from, below, order) = match along {
            Along::Down { floor, before } => (floor, before, "DESC"),
            Along::Up { after } => (after.saturating_add(1), i64::MAX, "ASC"),
        };
        let sql = format!(
            "SELECT id, idem_key, state, request FROM whish_journal_entries {} \
             WHERE id >= $1 AND id < $2 AND service = $3 AND operation = $4 \
               AND (target = $5 OR target IS NULL) \
             ORDER BY id {order} LIMIT $6",
            match self.backend() {
                crate::Backend::Sqlite => "NOT INDEXED",
                crate::Backend::Postgres => "",
            },
        );
        on_db!(self, pool => {
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(from)
                .bind(below)
                .bind(Service::MoneyTransfer.as_str())
                .bind(Operation::Send.as_str())
                .bind(target)
                .bind(PAGE)
                .fetch_all(pool)
                .await
                .map_err(JournalError::read)?;
            rows.iter().map(send_row).collect()
        })
    }
}

/// Which way a page of sends is read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Along {
    /// Ids at or above `floor` and below `before`, newest first.
    Down { floor: i64, before: i64 },
    /// Ids above `after`, oldest first.
    Up { after: i64 },
}

/// One row of a sends page.
fn send_row<R: sqlx::Row>(r: &R) -> Result<SendRow, JournalError>
where
    for<'c> &'c str: sqlx::ColumnIndex<R>,
    i64: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    String: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    Vec<u8>: for<'r> sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    Ok(SendRow {
        id: r.try_get("id").map_err(JournalError::read)?,
        key: r.try_get("idem_key").map_err(JournalError::read)?,
        state: State::parse(
            &r.try_get::<String, _>("state")
                .map_err(JournalError::read)?,
        ),
        request: r.try_get("request").map_err(JournalError::read)?,
    })
}

impl Db {
    /// The rows that cannot be read (id, key, why), oldest first: every row is looked at, a
    /// page at a time, so the journal's size bounds the time this takes, never the memory.
    pub(crate) async fn unreadable_rows(&self) -> Result<Vec<(i64, String, String)>, JournalError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM whish_journal_entries WHERE id > $1 ORDER BY id LIMIT $2"
        );
        let mut bad = Vec::new();
        let mut after = 0i64;
        loop {
            let (read, last) = on_db!(self, pool => {
                let rows = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
                    .bind(after)
                    .bind(PAGE)
                    .fetch_all(pool)
                    .await
                    .map_err(JournalError::read)?;
                let mut last = None;
                for row in &rows {
                    let claimed = claimed_of(row)?;
                    last = Some(claimed.lease.id);
                    if let Err(e) = claimed.entry {
                        bad.push((claimed.lease.id, claimed.key, e.to_string()));
                    }
                }
                (rows.len() as i64, last)
            });
            match last {
                Some(id) if read == PAGE => after = id,
                _ => return Ok(bad),
            }
        }
    }
}
