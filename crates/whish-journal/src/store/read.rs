//! Reading entries: by key, by id, the listings, what another process holds, the rows this
//! version cannot read.

use super::*;

impl Db {
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

    /// The open entries and those waiting for an operator, oldest first, and apart from them
    /// the rows among those that cannot be read (id, key, why): one bad row never hides the
    /// others.
    pub(crate) async fn open_entries(
        &self,
    ) -> Result<(Vec<Entry>, Vec<(i64, String, String)>), JournalError> {
        let sql = open_list_sql();
        on_db!(self, pool => {
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
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

    /// The entries a listing selects, newest first, each condition a bound parameter; and
    /// apart, the rows among them that cannot be read (id, key, why).
    pub(crate) async fn listing(
        &self,
        listing: &crate::Listing,
    ) -> Result<(Vec<Entry>, Vec<(i64, String, String)>), JournalError> {
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
        let sql = statement_text("entries of keys", self.backend(), padded, || {
            let marks: Vec<String> = (0..padded).map(|i| placeholder(i + 3, anonymous)).collect();
            format!(
                "SELECT {COLUMNS} FROM whish_journal_entries \
                 WHERE service = {} AND operation = {} AND idem_key IN ({})",
                placeholder(1, anonymous),
                placeholder(2, anonymous),
                marks.join(", ")
            )
        });
        on_db!(self, pool => {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
                .bind(service.as_str())
                .bind(operation.as_str());
            for k in keys.iter().chain(std::iter::repeat_n(&keys[keys.len() - 1], padded - keys.len())) {
                q = q.bind(*k);
            }
            let rows = q.fetch_all(pool).await.map_err(JournalError::read)?;
            rows.iter().map(entry_of).collect()
        })
    }
}

pub(super) fn claimed_of<R: Row>(row: &R) -> Result<Claimed, JournalError>
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

pub(super) fn entry_of<R: Row>(row: &R) -> Result<Entry, JournalError>
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
