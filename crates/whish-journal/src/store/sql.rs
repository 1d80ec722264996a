//! The text of the statements both backends share, and the parameters they bind.
//!
//! The statements that must cost in proportion to the open entries, not to the journal, read
//! the `(state, id)` index and never the final rows; the tests of this module check it with
//! EXPLAIN on both backends.

use super::*;

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
pub(super) fn insert_sql(now: &str, lease_now: &str, state: State) -> String {
    let state = state.as_str();
    format!(
        "INSERT INTO whish_journal_entries \
         (service, operation, idem_key, context, request, state, attempts, created_ms, \
          updated_ms, lease_owner, lease_until_ms, lease_token, target) \
         VALUES ($1, $2, $3, $4, $5, '{state}', 1, {now}, {now}, $6, {lease_now} + $7, $8, $9) \
         ON CONFLICT (service, operation, idem_key) DO NOTHING RETURNING id"
    )
}

/// The text of a statement whose shape is `name`, `backend` and a number of `rows`, built by
/// `build` once a process and shared after. A grouped statement's text (a reservation's chunk,
/// a group of outcomes, a lookup of keys) depends on nothing else, and building it for every
/// chunk cost more than binding the chunk's rows. Shapes of more than 1 024 rows are built
/// each time, so that what is kept stays small.
pub(crate) fn statement_text(
    name: &'static str,
    backend: Backend,
    rows: usize,
    build: impl FnOnce() -> String,
) -> std::sync::Arc<str> {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};
    type Texts = BTreeMap<(&'static str, bool, usize), Arc<str>>;
    static TEXTS: Mutex<Texts> = Mutex::new(BTreeMap::new());
    if rows > 1024 {
        return Arc::from(build());
    }
    let shape = (name, backend == Backend::Sqlite, rows);
    if let Some(text) = TEXTS.lock().unwrap_or_else(|e| e.into_inner()).get(&shape) {
        return Arc::clone(text);
    }
    let text: Arc<str> = Arc::from(build());
    TEXTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(shape)
        .or_insert(text)
        .clone()
}

/// The insert of `n` intents in one statement, each `intended` and leased: for each, nine
/// parameters as in [`insert_sql`], in order, then (SQLite) the lease clock's offset
/// ([`Db::lease_clock`]); returns the id and key of each row inserted (none for a key recorded
/// already, or by an earlier intent of the same statement).
///
/// On SQLite the parameters are anonymous (`?`: binding a numbered one looks its name up in a
/// list, so a statement of hundreds of them binds in quadratic time), and the rows hold
/// parameters only, joined to the clocks read once: SQLite parses each new text on each
/// connection, and a row that spelled out its three clock expressions made a 64-row statement
/// cost more to prepare than to run.
#[cfg_attr(
    not(any(feature = "money-transfer", feature = "sqlite")),
    allow(dead_code)
)]
pub(crate) fn insert_many_sql(backend: Backend, n: usize) -> std::sync::Arc<str> {
    const COLUMNS: &str = "(service, operation, idem_key, context, request, state, attempts, \
                           created_ms, updated_ms, lease_owner, lease_until_ms, lease_token, target)";
    statement_text("insert intents", backend, n, || match backend {
        #[cfg(feature = "sqlite")]
        Backend::Sqlite => format!(
            "INSERT INTO whish_journal_entries {COLUMNS} \
             SELECT v.column1, v.column2, v.column3, v.column4, v.column5, 'intended', 1, \
                    c.now, c.now, v.column6, c.now + c.ahead + v.column7, v.column8, v.column9 \
             FROM (VALUES {}) AS v, (SELECT {SQLITE_NOW} AS now, ? AS ahead) AS c \
             WHERE true \
             ON CONFLICT (service, operation, idem_key) DO NOTHING \
             RETURNING id, service, operation, idem_key",
            vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?)"; n].join(", ")
        ),
        #[cfg(feature = "postgres")]
        Backend::Postgres => {
            let values: Vec<String> = (0..n)
                .map(|i| {
                    let p = |k: usize| placeholder(i * 9 + k, false);
                    format!(
                        "({}, {}, {}, {}, {}, 'intended', 1, {POSTGRES_NOW}, {POSTGRES_NOW}, {}, \
                         {POSTGRES_NOW} + {}, {}, {})",
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
                "INSERT INTO whish_journal_entries {COLUMNS} VALUES {} \
                 ON CONFLICT (service, operation, idem_key) DO NOTHING \
                 RETURNING id, service, operation, idem_key",
                values.join(", ")
            )
        }
        #[allow(unreachable_patterns)]
        _ => unreachable!("a journal of a backend this build has no feature for"),
    })
}

/// The insert of `n` intents of one service, operation and target, each `intended` and leased
/// to one owner under one token (a reservation's, on SQLite): for each row three parameters
/// (key, context, body), then what every row shares, bound once (service, operation, owner,
/// lease in milliseconds, token, target, the lease clock's offset); returns the id and key of
/// each row inserted. A row of [`insert_many_sql`] binds nine; each parameter bound is work on
/// both sides of sqlx, a row at a time.
#[cfg(all(feature = "sqlite", feature = "money-transfer"))]
pub(crate) fn insert_shared_sql(n: usize) -> std::sync::Arc<str> {
    statement_text("insert intents of one kind", Backend::Sqlite, n, || {
        format!(
            "INSERT INTO whish_journal_entries \
             (service, operation, idem_key, context, request, state, attempts, created_ms, \
              updated_ms, lease_owner, lease_until_ms, lease_token, target) \
             SELECT c.service, c.operation, v.column1, v.column2, v.column3, 'intended', 1, \
                    c.now, c.now, c.owner, c.now + c.ahead + c.lease_ms, c.token, c.target \
             FROM (VALUES {}) AS v, \
                  (SELECT ? AS service, ? AS operation, ? AS owner, ? AS lease_ms, ? AS token, \
                          ? AS target, {SQLITE_NOW} AS now, ? AS ahead) AS c \
             WHERE true \
             ON CONFLICT (service, operation, idem_key) DO NOTHING \
             RETURNING id, idem_key",
            vec!["(?, ?, ?)"; n].join(", ")
        )
    })
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

/// A column's values as shared strings, for binding: a `&str` bound on SQLite is copied for
/// each row (twice: a `String` in an `Arc`), where the rows of a many-row statement mostly
/// repeat one value (the service, the owner, the target). Each run of one value is copied
/// once, and each row binds a reference to it.
#[derive(Default)]
pub(crate) struct SameText(Option<std::sync::Arc<str>>);

impl SameText {
    /// `text`, shared with the row before when it held the same.
    pub(crate) fn of(&mut self, text: &str) -> std::sync::Arc<str> {
        match &self.0 {
            Some(last) if **last == *text => std::sync::Arc::clone(last),
            _ => std::sync::Arc::clone(self.0.insert(std::sync::Arc::from(text))),
        }
    }
}

/// The `n`th parameter of a statement whose parameters each appear once, in order.
pub(crate) fn placeholder(n: usize, anonymous: bool) -> String {
    if anonymous {
        "?".to_owned()
    } else {
        format!("${n}")
    }
}

pub(super) const COLUMNS: &str = "id, service, operation, idem_key, context, request, state, attempts, \
                       created_ms, updated_ms, outcome, refs, lease_owner, lease_until_ms, lease_token, \
                       target";

/// The open states: those recovery works on.
pub(super) const OPEN_STATES: &str = "'intended', 'may-have-arrived', 'pending'";

/// The states a recovery claims: the open ones, and `needs-operator` when a person asked for
/// those to be worked again ([`Recovery::retry_needs_operator`](crate::Recovery::retry_needs_operator)).
pub(super) fn claimable(needs_operator: bool) -> &'static str {
    if needs_operator {
        RECOVERED_STATES
    } else {
        OPEN_STATES
    }
}

/// What recovery works on or reports held: the open states and `needs-operator` (never the
/// inbox's changes: they are the receiver's).
pub(super) const RECOVERED_STATES: &str =
    "'intended', 'may-have-arrived', 'needs-operator', 'pending'";

/// What a listing of the open entries shows: the open states, `needs-operator`, and the
/// inbox's changes not yet handed on.
pub(super) const LISTED_STATES: &str =
    "'escalated', 'intended', 'may-have-arrived', 'needs-operator', 'pending', 'waiting'";

/// The final states: what prune deletes (as migration 0006's index names them).
pub(super) const FINAL_STATES: &str = "'accepted', 'handed-on', 'refused'";

/// The inbox's states a worker takes: `waiting`, and `escalated` when a person asked (never
/// a request's state: a worker hands on changes, never sends).
pub(super) fn takeable(needs_operator: bool) -> &'static str {
    if needs_operator {
        "'escalated', 'waiting'"
    } else {
        "'waiting'"
    }
}

/// The open entries and those waiting for an operator, oldest first.
pub(super) fn open_list_sql() -> String {
    format!(
        "SELECT {COLUMNS} FROM whish_journal_entries WHERE state IN ({LISTED_STATES}) ORDER BY id"
    )
}

/// A listing, newest first: `$1` the state (or '' for any: the condition is then constant), `$2`
/// the earliest creation time, `$3` the limit.
pub(super) fn listing_sql(open_only: bool, one_state: bool) -> String {
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
pub(super) fn unknown_states_sql() -> String {
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
    pub(super) fn claim_open_sql(&self, take_over: bool, needs_operator: bool) -> String {
        self.claim_sql(claimable(needs_operator), "", take_over)
    }

    /// The same for the inbox's changes a worker takes ([`takeable`]), of one service only
    /// when `service` names one (a receiver takes only the changes it has handlers for).
    pub(super) fn take_waiting_sql(
        &self,
        needs_operator: bool,
        service: Option<crate::entry::Service>,
    ) -> String {
        // A stored name of a fixed set, never input.
        let only = service.map_or(String::new(), |s| format!("AND service = '{}'", s.as_str()));
        self.claim_sql(takeable(needs_operator), &only, false)
    }

    /// Lease up to `$4` entries in `states` (and meeting `only`, more conditions or none) after
    /// id `$3` whose lease is free or expired (or any, with `take_over`): `$1` the owner, `$2`
    /// the lease in ms, then the lease clock.
    fn claim_sql(&self, states: &str, only: &str, take_over: bool) -> String {
        let now = self.lease_now(5);
        let expired = if take_over {
            "TRUE".to_owned()
        } else {
            format!("(lease_until_ms IS NULL OR lease_until_ms < {now})")
        };
        let ids = self.ids_in(&format!(
            "SELECT id FROM whish_journal_entries \
             WHERE state IN ({states}) {only} AND id > $3 AND {expired} \
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
    pub(super) fn leased_elsewhere_sql(&self) -> String {
        let now = self.lease_now(2);
        format!(
            "SELECT {COLUMNS} FROM whish_journal_entries \
             WHERE state IN ({RECOVERED_STATES}) \
               AND lease_owner IS NOT NULL AND lease_owner <> $1 AND lease_until_ms >= {now} \
             ORDER BY id"
        )
    }

    /// On PostgreSQL, lock the rows a subquery selects, skipping those another transaction
    /// holds: two recovering processes never wait for each other. (SQLite has one writer.)
    pub(super) fn skip_locked(&self) -> &'static str {
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
    pub(super) fn ids_in(&self, subquery: &str) -> String {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(..) => format!("id IN ({subquery})"),
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => format!("id = ANY (ARRAY({subquery}))"),
        }
    }
}
