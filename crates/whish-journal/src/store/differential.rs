//! The backends apply the state machine's steps as it says: the same random sequences of steps
//! go to the pure core ([`crate::lifecycle::apply`]), to a real SQLite file and (when
//! `WHISH_TEST_POSTGRES_URL` names a server) to a fresh PostgreSQL database, and after every
//! step each says the same: whether the step applied, and the row's state, mark, holder, lease
//! and fencing token.

use super::Request;
use super::tests::sqlite;
use super::*;
use crate::entry::{Operation, RecordedOutcome, References, Service};
use crate::lifecycle::{Mark, Row, Step, apply};
use sqlx::Row as _;

const HOLDERS: [&str; 3] = ["a", "b", "c"];
const KEY: &str = "differential";
/// A lease that outlasts the test, and one already over at the next statement.
const LEASES: [i64; 2] = [600_000, -1];

fn request() -> Request<'static> {
    Request {
        service: Service::MoneyTransfer,
        operation: Operation::Send,
        key: KEY,
        context: None,
        body: b"{}",
        target: "test",
    }
}

/// What is compared: state, mark, holder, whether a lease is set, token.
type Seen = Option<(State, Mark, Option<String>, bool, i64)>;

fn seen_core(row: &Option<Row<String>>) -> Seen {
    row.as_ref().map(|r| {
        (
            r.state,
            r.mark,
            r.holder.clone(),
            r.until.is_some(),
            r.token,
        )
    })
}

fn mark_of(outcome: Option<&str>) -> Mark {
    let Some(text) = outcome else {
        return Mark::None;
    };
    let outcome: RecordedOutcome = serde_json::from_str(text).expect("an outcome");
    match outcome.result.as_str() {
        "not-sent" => Mark::NotSent,
        crate::entry::ABANDONED => Mark::Abandoned,
        _ if outcome
            .code
            .as_deref()
            .is_some_and(|c| crate::RETRY_UNDER_NEW_KEY.contains(&c)) =>
        {
            Mark::RetryUnderNewKey
        }
        _ => Mark::None,
    }
}

async fn seen_db(db: &Db) -> (Seen, Option<i64>) {
    const SQL: &str = "SELECT id, state, outcome, lease_owner, lease_until_ms, lease_token \
                       FROM whish_journal_entries WHERE idem_key = $1";
    on_db!(db, pool => {
        let row = sqlx::query(SQL).bind(KEY).fetch_optional(pool).await.expect("read");
        match row {
            None => (None, None),
            Some(r) => {
                let state: String = r.get("state");
                let outcome: Option<String> = r.get("outcome");
                let until: Option<i64> = r.get("lease_until_ms");
                (
                    Some((
                        State::parse(&state).expect("a known state"),
                        mark_of(outcome.as_deref()),
                        r.get("lease_owner"),
                        until.is_some(),
                        r.get("lease_token"),
                    )),
                    Some(r.get("id")),
                )
            }
        }
    })
}

fn outcome_of(state: State, mark: Mark) -> RecordedOutcome {
    match mark {
        Mark::NotSent => RecordedOutcome::new("not-sent"),
        Mark::Abandoned => RecordedOutcome::new(crate::entry::ABANDONED),
        Mark::RetryUnderNewKey => {
            let mut o = RecordedOutcome::new("refused");
            o.code = Some(crate::RETRY_UNDER_NEW_KEY[0].to_owned());
            o
        }
        Mark::None => RecordedOutcome::new(state.as_str()),
    }
}

/// A random step, its holder drawn from [`HOLDERS`] and its token from the row's (so that the
/// conditions on tokens are met as often as missed).
fn draw(rng: &mut fastrand::Rng, row: &Option<Row<String>>) -> Step<String> {
    let holder = HOLDERS[rng.usize(..HOLDERS.len())].to_owned();
    let lease = LEASES[rng.usize(..LEASES.len())];
    let token = match row {
        Some(r) if rng.u8(..4) != 0 => r.token,
        _ => rng.i64(1..5),
    };
    let holder = match row {
        Some(r) if rng.bool() => r.holder.clone().unwrap_or(holder),
        _ => holder,
    };
    match rng.u8(..13) {
        0 => Step::Insert {
            holder,
            token: insert_token(),
            lease,
        },
        1 => Step::SettleLostInsert { holder, token },
        2 => Step::Take {
            holder,
            lease,
            reopen: rng.bool(),
        },
        3 => Step::Renew {
            holder,
            token,
            lease,
        },
        4 => {
            let (state, mark) = [
                (State::Accepted, Mark::None),
                (State::Refused, Mark::None),
                (State::Refused, Mark::NotSent),
                (State::Refused, Mark::Abandoned),
                (State::Refused, Mark::RetryUnderNewKey),
                (State::MayHaveArrived, Mark::None),
                (State::Pending, Mark::None),
                (State::Waiting, Mark::None),
                (State::HandedOn, Mark::None),
            ][rng.usize(..9)];
            Step::Finish {
                holder,
                token,
                state,
                mark,
            }
        }
        5 => Step::Release { holder, token },
        6 => Step::ReleaseDead { holder, token },
        7 => Step::Claim {
            holder,
            lease,
            needs_operator: rng.bool(),
        },
        8 => Step::ToOperator { holder, token },
        9 => Step::Record {
            holder,
            token: insert_token(),
            lease,
        },
        10 => Step::TakeWaiting {
            holder,
            lease,
            needs_operator: rng.bool(),
        },
        11 => Step::Defer {
            holder,
            token,
            backoff: lease,
        },
        _ => Step::Prune {
            cutoff: i64::MAX / 2,
        },
    }
}

/// Apply `step` to the backend; whether it applied.
async fn apply_db(db: &Db, id: Option<i64>, step: &Step<String>) -> bool {
    let request = request();
    let lease = |token| Lease {
        id: id.unwrap_or(-1),
        token,
    };
    match step {
        Step::Insert {
            holder,
            token,
            lease,
        } => db
            .insert(&request, holder, *lease, *token)
            .await
            .expect("insert")
            .is_some(),
        Step::SettleLostInsert { holder, token } => db
            .settle_lost_insert(&request, holder, *token, &RecordedOutcome::new("not-sent"))
            .await
            .expect("settle"),
        Step::Record {
            holder,
            token,
            lease,
        } => db
            .record(&request, holder, *lease, *token)
            .await
            .expect("record")
            .is_some(),
        _ if id.is_none() => false,
        Step::Take {
            holder,
            lease,
            reopen,
        } => db
            .take_lease_as(id.unwrap_or(-1), holder, *lease, *reopen)
            .await
            .expect("take")
            .is_some(),
        Step::Renew {
            holder,
            token,
            lease: ms,
        } => db.renew(lease(*token), holder, *ms).await.expect("renew"),
        Step::Finish {
            holder,
            token,
            state,
            mark,
        } => db
            .finish(
                lease(*token),
                holder,
                *state,
                &outcome_of(*state, *mark),
                &References::default(),
            )
            .await
            .expect("finish"),
        Step::Release { holder, token } => {
            db.release(lease(*token), holder).await.expect("release")
        }
        Step::ReleaseDead { holder, token } => db
            .release_dead(id.unwrap_or(-1), holder, *token)
            .await
            .expect("release dead"),
        Step::Claim {
            holder,
            lease,
            needs_operator,
        } => db
            .claim_one(id.unwrap_or(-1), holder, *lease, *needs_operator)
            .await
            .expect("claim")
            .is_some(),
        Step::ToOperator { holder, token } => db
            .mark_needs_operator(lease(*token), holder, &RecordedOutcome::new("unknown"))
            .await
            .expect("to the operator"),
        Step::Defer {
            holder,
            token,
            backoff,
        } => db
            .defer(
                lease(*token),
                holder,
                &RecordedOutcome::new("failed"),
                *backoff,
            )
            .await
            .expect("defer"),
        Step::TakeWaiting {
            holder,
            lease,
            needs_operator,
        } => !db
            .take_waiting(holder, *lease, 0, 10, *needs_operator, None)
            .await
            .expect("take waiting")
            .is_empty(),
        // Everything final, whenever it last changed: an age in the future.
        Step::Prune { .. } => db.prune(-3_600_000).await.expect("prune") > 0,
    }
}

/// `runs` sequences of `len` random steps from `seed`, on `db`.
async fn differ(db: &Db, backend: &str, seed: u64, runs: usize, len: usize) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut applied_kinds = std::collections::BTreeSet::new();
    for run in 0..runs {
        on_db!(db, pool => {
            sqlx::query("DELETE FROM whish_journal_entries").execute(pool).await.expect("empty");
        });
        let mut core: Option<Row<String>> = None;
        let mut trail = Vec::new();
        for i in 0..len {
            let step = draw(&mut rng, &core);
            let (_, id) = seen_db(db).await;
            // The core's clock: any time after every earlier step (the conditions compare
            // with leases far in the future or already over).
            let now = 10 * (i as i64 + 1);
            let core_applied = apply(&mut core, &step, now);
            let db_applied = apply_db(db, id, &step).await;
            trail.push(format!("{step:?} -> {core_applied}"));
            if core_applied {
                let kind = format!("{step:?}");
                applied_kinds.insert(kind.split([' ', '{']).next().unwrap_or("").to_owned());
            }
            let (db_row, _) = seen_db(db).await;
            assert_eq!(
                (core_applied, seen_core(&core)),
                (db_applied, db_row),
                "{backend}, seed {seed}, run {run}: the core (left) and the database (right) differ after:\n{}",
                trail.join("\n")
            );
        }
    }
    // Every kind of step met its condition at least once: the comparison covered each.
    assert_eq!(
        applied_kinds.len(),
        13,
        "{backend}: applied only {applied_kinds:?}"
    );
}

#[tokio::test]
async fn sqlite_applies_every_step_as_the_core_says() {
    let db = sqlite("differential").await;
    differ(&db, "SQLite", 42, 60, 25).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_applies_every_step_as_the_core_says() {
    let Some(db) = super::tests::postgres().await else {
        return;
    };
    differ(&db, "PostgreSQL", 42, 60, 25).await;
}
