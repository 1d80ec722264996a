//! The inbox's world: a service reporting one change, delivered (again while it gets no 200)
//! to two receivers on one journal, whose workers hand it on; faults at every step.
//!
//! The receivers' decisions are the production code's: the inbox row's steps are
//! [`lifecycle::apply`] (`Record`, `TakeWaiting`, `Finish`, `Defer`, `ToOperator`), the answer to a
//! delivery is [`lifecycle::answer_to_delivery`], a failed hand-on goes where
//! [`lifecycle::after_hand_on_failure`] says.

use crate::entry::State;
use crate::lifecycle::{self, Mark, Row, Step, Write};

use super::explore::System;

const LEASE: i64 = 10;
const DEADLINE: i64 = 100;
/// A failed hand-on waits this long (the lease kept) before any worker takes it again.
const BACKOFF: i64 = 5;

/// Where a worker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Worker {
    /// Looking for a waiting change.
    Idle,
    /// Holds it with `token`; the status read is next.
    Holding { token: i64 },
    /// The status read answered; the handler runs.
    Handling { token: i64 },
    /// The handler returned; the change is to be marked handed on.
    Returned { token: i64 },
    /// Its process is gone.
    Gone,
}

/// The whole world.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct World {
    pub row: Option<Row<u8>>,
    /// Deliveries the service may still make (it delivers while it has no 200).
    pub deliveries: u8,
    /// The service got a 200: it delivers no more.
    pub acked: bool,
    /// One worker per receiver process.
    pub workers: Vec<Worker>,
    pub alive: Vec<bool>,
    /// Times a handler returned.
    pub handled: u8,
    /// The documented window in which a change is handed on twice: a worker's handler returned
    /// and the change was not marked (a crash, a failed write), or a worker whose handler ran
    /// or had returned froze or lost the database for a whole lease.
    pub window: bool,
    pub now: i64,
    pub faults: u8,
    pub deadline_passed: bool,
}

/// The inbox model.
pub(crate) struct Inbox {
    pub receivers: u8,
    pub deliveries: u8,
    pub faults: u8,
}

impl Inbox {
    fn apply(w: &mut World, step: Step<u8>) -> bool {
        lifecycle::apply(&mut w.row, &step, w.now)
    }

    fn token(w: &World) -> i64 {
        w.row.as_ref().map_or(0, |r| r.token)
    }

    /// A delivery to receiver `p`: the record, then the answer [`lifecycle::answer_to_delivery`]
    /// gives for what the write did.
    fn deliver(&self, w: &World, p: usize, out: &mut Vec<(String, World)>) {
        let record = Step::Record {
            holder: p as u8,
            token: 1000 * (p as i64 + 1) + i64::from(w.deliveries),
            lease: LEASE,
        };
        let mut outcomes = vec![(None, "")];
        if w.faults > 0 {
            outcomes.push((Some(false), ", its write fails"));
            outcomes.push((Some(true), ", its write commits and the answer is lost"));
        }
        for (fault, how) in outcomes {
            let mut n = w.clone();
            n.deliveries -= 1;
            let write = match fault {
                None if Self::apply(&mut n, record.clone()) => {
                    n.workers[p] = Worker::Holding {
                        token: Self::token(&n),
                    };
                    Write::Applied
                }
                None => Write::NotApplied,
                Some(commits) => {
                    n.faults -= 1;
                    if commits {
                        Self::apply(&mut n, record.clone());
                    }
                    Write::Failed
                }
            };
            let status = lifecycle::answer_to_delivery(write);
            if status == 200 {
                n.acked = true;
            }
            out.push((
                format!("the service delivers to receiver {p}{how}: {write:?}, answered {status}"),
                n,
            ));
        }
    }

    fn worker_steps(&self, w: &World, p: usize, out: &mut Vec<(String, World)>) {
        let me = p as u8;
        match w.workers[p] {
            Worker::Gone => {}
            Worker::Idle => {
                let mut n = w.clone();
                let take = Step::TakeWaiting {
                    holder: me,
                    lease: LEASE,
                    needs_operator: false,
                };
                if Self::apply(&mut n, take) {
                    n.workers[p] = Worker::Holding {
                        token: Self::token(&n),
                    };
                    out.push((format!("worker {p} takes the waiting change"), n));
                }
            }
            Worker::Holding { token } => {
                let mut n = w.clone();
                if lifecycle::renew_before_work() {
                    let renew = Step::Renew {
                        holder: me,
                        token,
                        lease: LEASE,
                    };
                    if !Self::apply(&mut n, renew) {
                        n.workers[p] = Worker::Idle;
                        out.push((
                            format!("worker {p} finds its lease taken and runs nothing"),
                            n,
                        ));
                        return;
                    }
                }
                n.workers[p] = Worker::Handling { token };
                out.push((format!("worker {p}: the status read answers"), n));
                if w.faults > 0 {
                    let mut n = w.clone();
                    n.faults -= 1;
                    self.failed(&mut n, p, token);
                    out.push((format!("worker {p}: the status read fails"), n));
                }
            }
            Worker::Handling { token } => {
                let mut n = w.clone();
                n.handled += 1;
                n.workers[p] = Worker::Returned { token };
                out.push((format!("worker {p}: the handler returns"), n));
                if w.faults > 0 {
                    let mut n = w.clone();
                    n.faults -= 1;
                    self.failed(&mut n, p, token);
                    out.push((format!("worker {p}: the handler fails"), n));
                }
            }
            Worker::Returned { token } => {
                let mark = Step::Finish {
                    holder: me,
                    token,
                    state: State::HandedOn,
                    mark: Mark::None,
                };
                let mut n = w.clone();
                if !Self::apply(&mut n, mark.clone()) {
                    n.window = true;
                }
                n.workers[p] = Worker::Idle;
                out.push((format!("worker {p} marks the change handed on"), n));
                if w.faults > 0 {
                    let mut n = w.clone();
                    n.faults -= 1;
                    n.window = true;
                    n.workers[p] = Worker::Idle;
                    out.push((format!("worker {p}: the mark's write fails"), n));
                }
            }
        }
    }

    /// A status read or handler failed: the change goes where the production rule says.
    fn failed(&self, n: &mut World, p: usize, token: i64) {
        let created = n.row.as_ref().map_or(0, |r| r.created);
        let to = lifecycle::after_hand_on_failure(lifecycle::overdue(created, DEADLINE, n.now));
        let step = match to {
            State::Escalated => Step::ToOperator {
                holder: p as u8,
                token,
            },
            State::Waiting => Step::Defer {
                holder: p as u8,
                token,
                backoff: BACKOFF,
            },
            state => Step::Finish {
                holder: p as u8,
                token,
                state,
                mark: Mark::None,
            },
        };
        Self::apply(n, step);
        n.workers[p] = Worker::Idle;
    }
}

impl System for Inbox {
    type State = World;

    fn init(&self) -> World {
        World {
            row: None,
            deliveries: self.deliveries,
            acked: false,
            workers: vec![Worker::Idle; self.receivers as usize],
            alive: vec![true; self.receivers as usize],
            handled: 0,
            window: false,
            now: 0,
            faults: self.faults,
            deadline_passed: false,
        }
    }

    fn next(&self, w: &World, out: &mut Vec<(String, World)>) {
        if !w.acked && w.deliveries > 0 {
            for p in 0..w.workers.len() {
                if w.alive[p] {
                    self.deliver(w, p, out);
                }
            }
        }
        for p in 0..w.workers.len() {
            self.worker_steps(w, p, out);
        }
        if w.faults > 0 {
            for p in 0..w.workers.len() {
                if w.alive[p] && w.workers[p] != Worker::Idle {
                    let mut n = w.clone();
                    n.faults -= 1;
                    n.alive[p] = false;
                    if matches!(w.workers[p], Worker::Returned { .. }) {
                        n.window = true;
                    }
                    n.workers[p] = Worker::Gone;
                    out.push((format!("receiver {p} is killed"), n));
                }
            }
        }
        // A lease runs out: time passing when nobody renews it (its holder is gone, or holds
        // it no more), a fault when its worker is frozen mid-change.
        if let Some(r) = &w.row
            && let (Some(h), Some(until)) = (r.holder, r.until)
            && until >= w.now
        {
            let renewing = matches!(
                w.workers[h as usize],
                Worker::Holding { .. } | Worker::Handling { .. } | Worker::Returned { .. }
            );
            if !renewing || w.faults > 0 {
                let mut n = w.clone();
                if renewing {
                    n.faults -= 1;
                    // Frozen, or cut from the database, for a whole lease while its handler
                    // runs or has returned unmarked: the documented window (another worker
                    // hands it on too). Before the handler (holding, waiting for a slot) it is
                    // no window: the worker checks its lease before it runs anything.
                    if !matches!(w.workers[h as usize], Worker::Holding { .. }) {
                        n.window = true;
                    }
                }
                n.now = until + 1;
                out.push((format!("receiver {h}'s lease runs out"), n));
            }
        }
        if !w.deadline_passed && w.row.is_some() {
            let mut n = w.clone();
            n.deadline_passed = true;
            n.now += DEADLINE + 1;
            // A worker holding the change renews its lease all that time (the heartbeat).
            if let Some(r) = &w.row
                && let Some(h) = r.holder
                && matches!(
                    w.workers[h as usize],
                    Worker::Holding { .. } | Worker::Handling { .. } | Worker::Returned { .. }
                )
            {
                let renew = Step::Renew {
                    holder: h,
                    token: r.token,
                    lease: LEASE,
                };
                Self::apply(&mut n, renew);
            }
            out.push(("the deadline passes".to_owned(), n));
        }
    }

    fn violation(&self, w: &World, terminal: bool) -> Option<String> {
        if w.acked && w.row.is_none() {
            return Some("the service got a 200 for a change the inbox does not hold".into());
        }
        if let Some(r) = &w.row
            && r.state == State::HandedOn
            && w.handled == 0
        {
            return Some("the change is marked handed on, but no handler took it".into());
        }
        if w.handled >= 2 && !w.window {
            return Some("a handler saw the change twice outside the documented window".into());
        }
        if terminal
            && w.acked
            && w.row
                .as_ref()
                .is_some_and(|r| r.state == State::Waiting && w.alive.iter().any(|a| *a))
            && w.workers.contains(&Worker::Idle)
        {
            return Some("a waiting change is left while a live worker is idle".into());
        }
        None
    }
}
