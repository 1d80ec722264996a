//! The life of a journal entry as one state machine, in code that does no I/O.
//!
//! An entry is a [`Row`]: its [`State`], what its outcome says of the request ([`Mark`]), and
//! its lease (holder, end, fencing token). Every write the journal makes is one [`Step`], and
//! [`apply`] says what the step does to the row, or that its condition does not hold and it
//! changes nothing. The two backends (`store.rs`) apply each step as one conditional statement
//! whose `WHERE` is the step's condition; a differential test feeds the same random steps to
//! this function, to SQLite and to PostgreSQL and compares the rows, and the model checker
//! (`cargo xtask model`) explores every interleaving of them.
//!
//! The decisions around the steps live here too, as functions of what is known: what a caller
//! is told once its outcome was or was not recorded ([`told`]), what a failed insert must do
//! before it may say "nothing was sent" ([`on_insert_error`]), whether recovery may still send
//! ([`overdue`]). The async code calls them and decides nothing of its own.
//!
//! | step | condition | effect |
//! |---|---|---|
//! | insert | no row for the key | `intended`, leased to the inserter with the insert's own token |
//! | settle a lost insert | no row, or `intended` under this holder and this insert's token | `refused` / `not-sent`, lease cleared, token + 1 |
//! | take (a resend) | not `refused`; lease free, expired or the taker's | leased to the taker, token + 1 |
//! | reopen (a retry of `not-sent`) | `refused` / `not-sent`; lease free, expired or the taker's | `intended`, leased, token + 1 |
//! | renew (heartbeat) | holder and token are the renewer's | lease end moves |
//! | finish | holder and token are the finisher's | the new state and mark, lease cleared |
//! | release | holder and token are the releaser's | lease cleared |
//! | release a dead holder | holder and token as read | lease cleared, token + 1 |
//! | claim (recovery) | open (or `needs-operator` on a person's word); lease free or expired | leased, token + 1 |
//! | defer (a failed hand-on) | holder and token are the deferrer's | `waiting`, lease end moves to the backoff's end |
//! | to the operator | holder and token are the marker's | `needs-operator` (a change of the inbox: `escalated`), lease cleared |
//! | record (the inbox) | no row for the key | `waiting`, leased to the receiver |
//! | take a waiting change | `waiting` (or `escalated` on a person's word); lease free or expired | leased, token + 1 |
//! | prune | final and last changed before the cutoff, not kept | the row is gone |

use crate::entry::State;

/// What an entry's outcome says of the request, as far as any condition reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mark {
    /// No outcome, or one no condition reads.
    None,
    /// `refused` because it was never sent: the only refusal a retry may reopen.
    NotSent,
    /// `refused` because a person abandoned it after the service showed it never took effect.
    Abandoned,
    /// `refused` with a code that asks for a new key: kept by prune.
    RetryUnderNewKey,
}

/// One entry, as the steps see it. `H` names a holder (the journal's owner string; the model
/// uses small numbers).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Row<H> {
    /// Where the entry stands.
    pub state: State,
    /// What its outcome says.
    pub mark: Mark,
    /// Who holds the lease, if anyone.
    pub holder: Option<H>,
    /// When the lease ends, on the journal's clock.
    pub until: Option<i64>,
    /// The fencing token: every take of the lease makes it grow.
    pub token: i64,
    /// When the request was recorded to go out (a reopen moves it), on the journal's clock.
    pub created: i64,
    /// When the entry last changed state.
    pub updated: i64,
}

/// One write the journal makes about an entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Step<H> {
    /// Record a request before it is sent, leased to `holder` with the insert's own `token`.
    Insert {
        /// The inserting process.
        holder: H,
        /// Drawn for this insert alone, so that its orphan is told apart from any other entry.
        token: i64,
        /// The lease's length.
        lease: i64,
    },
    /// After an insert whose answer was lost: close the request as never sent.
    SettleLostInsert {
        /// The inserting process.
        holder: H,
        /// The lost insert's token.
        token: i64,
    },
    /// Take the lease of a recorded entry for another send (`reopen`: of a `not-sent` one).
    Take {
        /// The taking process.
        holder: H,
        /// The lease's length.
        lease: i64,
        /// Reopen an entry recorded as never sent.
        reopen: bool,
    },
    /// A heartbeat.
    Renew {
        /// The renewing process.
        holder: H,
        /// The token it holds.
        token: i64,
        /// The lease's length from now.
        lease: i64,
    },
    /// Record where the entry stands and release the lease.
    Finish {
        /// The finishing process.
        holder: H,
        /// The token it holds.
        token: i64,
        /// The new state.
        state: State,
        /// What the outcome says.
        mark: Mark,
    },
    /// Release the lease, changing nothing else.
    Release {
        /// The releasing process.
        holder: H,
        /// The token it holds.
        token: i64,
    },
    /// Free the lease of a holder proved dead.
    ReleaseDead {
        /// The dead holder, as read.
        holder: H,
        /// Its token, as read.
        token: i64,
    },
    /// Recovery leases an open entry whose lease is free or expired.
    Claim {
        /// The recovering process.
        holder: H,
        /// The lease's length.
        lease: i64,
        /// Also entries waiting for the operator (a person asked for them to be worked again).
        needs_operator: bool,
    },
    /// The inbox: a hand-on failed and is tried again after a backoff. The change stays
    /// `waiting`, and the lease is kept until `backoff` from now, so no worker takes it sooner.
    Defer {
        /// The process that holds it.
        holder: H,
        /// The token it holds.
        token: i64,
        /// How long until it may be taken again.
        backoff: i64,
    },
    /// Hand the entry to a person.
    ToOperator {
        /// The process that holds it.
        holder: H,
        /// The token it holds.
        token: i64,
    },
    /// The inbox: record a change a service reported, before its 200, leased to the receiver
    /// that will hand it on. A change recorded before (a redelivery) changes nothing.
    Record {
        /// The receiving process.
        holder: H,
        /// Drawn for this record.
        token: i64,
        /// The lease's length.
        lease: i64,
    },
    /// The inbox: a worker takes a waiting change (or one waiting for a person, on their word)
    /// whose lease is free or has run out.
    TakeWaiting {
        /// The worker's process.
        holder: H,
        /// The lease's length.
        lease: i64,
        /// Also changes waiting for a person.
        needs_operator: bool,
    },
    /// Delete a final entry last changed before `cutoff`.
    Prune {
        /// The cutoff.
        cutoff: i64,
    },
}

impl<H: PartialEq> Row<H> {
    fn held_by(&self, holder: &H, token: i64) -> bool {
        self.holder.as_ref() == Some(holder) && self.token == token
    }

    /// The lease is free, has run out, or is `holder`'s.
    fn takeable_by(&self, holder: &H, now: i64) -> bool {
        self.holder.is_none()
            || self.holder.as_ref() == Some(holder)
            || self.until.is_some_and(|until| until < now)
    }

    /// The lease is free or has run out.
    fn free(&self, now: i64) -> bool {
        self.until.is_none_or(|until| until < now)
    }

    fn lease_to(&mut self, holder: H, until: i64) {
        self.holder = Some(holder);
        self.until = Some(until);
        self.token += 1;
    }

    fn unlease(&mut self) {
        self.holder = None;
        self.until = None;
    }
}

/// Apply `step` to the entry `row` (`None`: the key holds none) at `now` on the journal's
/// clock. True when the step's condition held and the row changed (or was created or deleted);
/// false when it changed nothing.
pub fn apply<H: PartialEq + Clone>(row: &mut Option<Row<H>>, step: &Step<H>, now: i64) -> bool {
    match (row.as_mut(), step) {
        (
            None,
            Step::Insert {
                holder,
                token,
                lease,
            }
            | Step::Record {
                holder,
                token,
                lease,
            },
        ) => {
            // An intent to send, or a change of the inbox to hand on: leased to its writer.
            let state = if matches!(step, Step::Record { .. }) {
                State::Waiting
            } else {
                State::Intended
            };
            *row = Some(Row {
                state,
                mark: Mark::None,
                holder: Some(holder.clone()),
                until: Some(now + lease),
                token: *token,
                created: now,
                updated: now,
            });
            true
        }
        (None, Step::SettleLostInsert { .. }) => {
            *row = Some(Row {
                state: State::Refused,
                mark: Mark::NotSent,
                holder: None,
                until: None,
                token: 1,
                created: now,
                updated: now,
            });
            true
        }
        (None, _) | (Some(_), Step::Insert { .. } | Step::Record { .. }) => false,
        (Some(r), Step::SettleLostInsert { holder, token }) => {
            if r.state != State::Intended || !r.held_by(holder, *token) {
                return false;
            }
            r.state = State::Refused;
            r.mark = Mark::NotSent;
            r.updated = now;
            r.unlease();
            r.token += 1;
            true
        }
        (
            Some(r),
            Step::Take {
                holder,
                lease,
                reopen,
            },
        ) => {
            let recorded_as = if *reopen {
                r.state == State::Refused && r.mark == Mark::NotSent
            } else {
                r.state != State::Refused
            };
            if !recorded_as || !r.takeable_by(holder, now) {
                return false;
            }
            if *reopen {
                r.state = State::Intended;
                r.mark = Mark::None;
                r.created = now;
            }
            r.updated = now;
            r.lease_to(holder.clone(), now + lease);
            true
        }
        (
            Some(r),
            Step::Renew {
                holder,
                token,
                lease,
            },
        ) => {
            if !r.held_by(holder, *token) {
                return false;
            }
            r.until = Some(now + lease);
            true
        }
        (
            Some(r),
            Step::Finish {
                holder,
                token,
                state,
                mark,
            },
        ) => {
            if !r.held_by(holder, *token) {
                return false;
            }
            r.state = *state;
            r.mark = *mark;
            r.updated = now;
            r.unlease();
            true
        }
        (Some(r), Step::Release { holder, token }) => {
            if !r.held_by(holder, *token) {
                return false;
            }
            r.unlease();
            true
        }
        (Some(r), Step::ReleaseDead { holder, token }) => {
            if !r.held_by(holder, *token) {
                return false;
            }
            r.unlease();
            r.token += 1;
            true
        }
        (
            Some(r),
            Step::Claim {
                holder,
                lease,
                needs_operator,
            },
        ) => {
            let claimable =
                r.state.is_open() || (*needs_operator && r.state == State::NeedsOperator);
            if !claimable || !r.free(now) {
                return false;
            }
            r.lease_to(holder.clone(), now + lease);
            true
        }
        (
            Some(r),
            Step::TakeWaiting {
                holder,
                lease,
                needs_operator,
            },
        ) => {
            let waiting =
                r.state == State::Waiting || (*needs_operator && r.state == State::Escalated);
            if !waiting || !r.free(now) {
                return false;
            }
            r.lease_to(holder.clone(), now + lease);
            true
        }
        (
            Some(r),
            Step::Defer {
                holder,
                token,
                backoff,
            },
        ) => {
            if !r.held_by(holder, *token) {
                return false;
            }
            r.state = State::Waiting;
            r.mark = Mark::None;
            r.updated = now;
            r.until = Some(now + backoff);
            true
        }
        (Some(r), Step::ToOperator { holder, token }) => {
            if !r.held_by(holder, *token) {
                return false;
            }
            // A change of the inbox waits for a person in a state of its own.
            r.state = if matches!(r.state, State::Waiting | State::Escalated) {
                State::Escalated
            } else {
                State::NeedsOperator
            };
            r.updated = now;
            r.unlease();
            true
        }
        (Some(r), Step::Prune { cutoff }) => {
            let kept = matches!(r.mark, Mark::Abandoned | Mark::RetryUnderNewKey);
            if !r.state.is_final() || r.updated >= *cutoff || kept {
                return false;
            }
            *row = None;
            true
        }
    }
}

/// The state a call's verdict leaves its entry in (`None`: leave it as it was). "Nothing sent"
/// is final for a first send, and changes nothing for a resend: an earlier send may still
/// have arrived.
pub fn state_after(verdict: whish_core::verdict::Verdict, resend: bool) -> Option<State> {
    match verdict {
        whish_core::verdict::Verdict::NothingSent if resend => None,
        v => Some(State::of_verdict(v)),
    }
}

/// What a finish records of a verdict, as far as a condition reads it.
pub fn mark_of(verdict: whish_core::verdict::Verdict) -> Mark {
    match verdict {
        whish_core::verdict::Verdict::NothingSent => Mark::NotSent,
        _ => Mark::None,
    }
}

/// Whether a call's own answer reached the journal under its lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Recorded {
    /// Written under the lease.
    Kept,
    /// The lease was another process's by then: nothing written.
    Lost,
    /// The write failed: the entry stays open, and a recovery sends the request again.
    Failed,
}

/// What a caller is told, from its own answer's verdict and whether the journal recorded it.
///
/// An answer the journal cannot change (accepted, Pending, unknown) is told as it is. A refusal
/// or "nothing sent" is final only once recorded: unrecorded, the entry stays open and a
/// recovery sends the request again; after a lost lease, the process that took over may have
/// sent it first. Either way the caller is told the outcome is unknown, never that it failed.
pub fn told(
    verdict: whish_core::verdict::Verdict,
    recorded: Recorded,
) -> whish_core::verdict::Verdict {
    use whish_core::verdict::Verdict;
    let final_only_if_recorded = matches!(verdict, Verdict::Refused | Verdict::NothingSent);
    match recorded {
        Recorded::Kept => verdict,
        Recorded::Lost if whish_core::lies::on(whish_core::lies::Lie::LeaseLostFailed) => verdict,
        Recorded::Lost | Recorded::Failed if final_only_if_recorded => Verdict::Unknown,
        Recorded::Lost | Recorded::Failed => verdict,
    }
}

/// What a send is told when the write that takes (or reopens) a recorded request's lease fails:
/// the write may have committed with its answer lost, leaving the entry open and leased, and a
/// recovery then sends it. Never "nothing was sent".
pub fn told_when_take_fails(reopen: bool) -> whish_core::verdict::Verdict {
    if reopen && whish_core::lies::on(whish_core::lies::Lie::ReopenErrorNotSent) {
        return whish_core::verdict::Verdict::NothingSent;
    }
    whish_core::verdict::Verdict::Unknown
}

/// What an insert whose answer was lost must do before it says anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OnInsertError {
    /// Close the request as never sent ([`Step::SettleLostInsert`]) first: "nothing was sent"
    /// only when that step applies; the key's other entry (an earlier send) when it does not;
    /// an unknown outcome when the step itself fails.
    SettleFirst,
    /// Say "nothing was sent" at once (a recovery may then send what the lost insert wrote).
    ReportNothingSent,
}

/// The one rule for a failed insert: it may have committed, so it is settled first.
pub fn on_insert_error() -> OnInsertError {
    if whish_core::lies::on(whish_core::lies::Lie::LostCommitNotSent) {
        OnInsertError::ReportNothingSent
    } else {
        OnInsertError::SettleFirst
    }
}

/// What the write of a reported change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Write {
    /// It recorded the change now.
    Applied,
    /// The change was recorded before (a redelivery).
    NotApplied,
    /// It failed, or its answer was lost: the change may or may not be recorded.
    Failed,
}

/// The receiver's HTTP status for a delivery of a change: 200 only once the change is recorded
/// (now or before); 503 otherwise, so that the service delivers it again. Never decided by a
/// check that writes nothing.
pub fn answer_to_delivery(write: Write) -> u16 {
    match write {
        Write::Applied | Write::NotApplied => 200,
        Write::Failed if whish_core::lies::on(whish_core::lies::Lie::OkBeforeRecord) => 200,
        Write::Failed => 503,
    }
}

/// Whether a worker that holds a change renews its lease before it runs the status read or
/// the handler. Always: it may have waited (for a worker slot, or frozen) past the lease's end,
/// and another worker may hold the change now; it runs nothing unless the renewal holds.
pub fn renew_before_work() -> bool {
    !whish_core::lies::on(whish_core::lies::Lie::StaleHolderRuns)
}

/// Where a change goes when its status read or handler failed: back to `waiting` for the next
/// worker, or to a person (`escalated`) once `overdue`. Never handed on without a handler that
/// took it.
pub fn after_hand_on_failure(overdue: bool) -> State {
    if whish_core::lies::on(whish_core::lies::Lie::GiveUpOnFailure) {
        return State::HandedOn;
    }
    if overdue {
        State::Escalated
    } else {
        State::Waiting
    }
}

/// True when an entry recorded at `created` is past a recovery `deadline` at `now` (all in ms
/// on the journal's clock): recovery then hands it to a person and sends nothing.
///
/// Strictly past: with a deadline of zero an entry is overdue from the millisecond after it was
/// recorded. Within that millisecond it stays where it is (open, or waiting in the inbox), and
/// the next pass, which finds it overdue, hands it to a person: the one way to err is to wait
/// a little longer, never to act on an entry that is not overdue.
pub fn overdue(created: i64, deadline: i64, now: i64) -> bool {
    if whish_core::lies::on(whish_core::lies::Lie::RecoverPastDeadline) {
        return false;
    }
    now.saturating_sub(created) > deadline
}

#[cfg(test)]
mod tests {
    use super::*;
    use whish_core::verdict::Verdict;

    fn insert(holder: u8, token: i64) -> Step<u8> {
        Step::Insert {
            holder,
            token,
            lease: 10,
        }
    }

    #[test]
    fn a_lost_insert_settles_only_its_own_entry() {
        let mut row = None;
        assert!(apply(&mut row, &insert(1, 7), 0));
        // Another insert of the same process, with its own token, finds the key: its
        // settlement must leave the first send alone.
        assert!(!apply(
            &mut row,
            &Step::SettleLostInsert {
                holder: 1,
                token: 8
            },
            1
        ));
        assert_eq!(row.as_ref().map(|r| r.state), Some(State::Intended));
        assert!(apply(
            &mut row,
            &Step::SettleLostInsert {
                holder: 1,
                token: 7
            },
            1
        ));
        assert_eq!(
            row.as_ref().map(|r| (r.state, r.mark)),
            Some((State::Refused, Mark::NotSent))
        );
    }

    #[test]
    fn a_live_lease_is_neither_claimed_nor_taken_and_an_expired_one_is() {
        let mut row = None;
        apply(&mut row, &insert(1, 2), 0);
        let claim = Step::Claim {
            holder: 2,
            lease: 10,
            needs_operator: false,
        };
        let take = Step::Take {
            holder: 2,
            lease: 10,
            reopen: false,
        };
        assert!(!apply(&mut row, &claim, 5));
        assert!(!apply(&mut row, &take, 10));
        assert!(apply(&mut row, &claim, 11));
        // The first holder's token is stale: its outcome is not written.
        let finish = Step::Finish {
            holder: 1,
            token: 2,
            state: State::Refused,
            mark: Mark::None,
        };
        assert!(!apply(&mut row, &finish, 12));
        assert_eq!(row.as_ref().map(|r| r.token), Some(3));
    }

    #[test]
    fn only_a_not_sent_refusal_reopens_and_a_refusal_is_never_taken() {
        let mut row = None;
        apply(&mut row, &insert(1, 2), 0);
        let finish = |mark| Step::Finish {
            holder: 1,
            token: 2,
            state: State::Refused,
            mark,
        };
        apply(&mut row, &finish(Mark::None), 1);
        for reopen in [false, true] {
            let take = Step::Take {
                holder: 1,
                lease: 10,
                reopen,
            };
            assert!(!apply(&mut row, &take, 2), "reopen {reopen}");
        }
        let mut row = None;
        apply(&mut row, &insert(1, 2), 0);
        apply(&mut row, &finish(Mark::NotSent), 1);
        let reopen = Step::Take {
            holder: 1,
            lease: 10,
            reopen: true,
        };
        assert!(apply(&mut row, &reopen, 5));
        let r = row.expect("row");
        assert_eq!((r.state, r.created, r.token), (State::Intended, 5, 3));
    }

    #[test]
    fn prune_keeps_what_a_later_send_is_told_apart_by() {
        for (mark, kept) in [
            (Mark::None, false),
            (Mark::NotSent, false),
            (Mark::Abandoned, true),
            (Mark::RetryUnderNewKey, true),
        ] {
            let mut row = None;
            apply(&mut row, &insert(1, 2), 0);
            let finish = Step::Finish {
                holder: 1,
                token: 2,
                state: State::Refused,
                mark,
            };
            apply(&mut row, &finish, 1);
            assert_eq!(apply(&mut row, &Step::Prune { cutoff: 2 }, 3), !kept);
        }
    }

    #[test]
    fn a_refusal_is_told_only_once_it_is_recorded() {
        for v in Verdict::ALL {
            assert_eq!(told(v, Recorded::Kept), v);
            let open = matches!(v, Verdict::Refused | Verdict::NothingSent);
            for r in [Recorded::Lost, Recorded::Failed] {
                assert_eq!(told(v, r), if open { Verdict::Unknown } else { v });
            }
        }
    }
}
