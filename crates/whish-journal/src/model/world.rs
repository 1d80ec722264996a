//! The world the checker explores: one request's journal entry, the service, the network, and
//! the processes and people working on it, with a fault possible at every step.
//!
//! Every decision is the production code's: the entry's steps are [`lifecycle::apply`], the
//! verdict is [`whish_core::verdict::decide`], what the caller is told is
//! [`lifecycle::told`], a failed insert follows [`lifecycle::on_insert_error`], the deadline is
//! [`lifecycle::overdue`], a holder's death is [`owner::judge`], an insert's token is
//! [`insert_token_from`]. What is written here is only the order in which the async code calls
//! them, and the service.

use whish_core::verdict::Verdict;
use whish_core::verdict::{Answer, History, decide};

use crate::entry::State;
use crate::lifecycle::{self, Mark, OnInsertError, Recorded, Row, Step};
use crate::owner::{self, Seen, Stat, View};
use crate::store::insert_token_from;

use super::Bounds;
use super::explore::System;

/// A lease's length, on the model's clock.
const LEASE: i64 = 10;
/// The recovery deadline, on the model's clock.
const DEADLINE: i64 = 100;
/// No deadline: a person's retry of entries waiting for the operator.
const NO_DEADLINE: i64 = i64::MAX / 4;
/// A network message nobody waits for (its sender timed out).
const NOBODY: u8 = u8::MAX;

/// What the service holds under the request's key. It keeps one transfer per key, and
/// answers any resend of a key it has seen with `already.done`, refused keys included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Service {
    /// Never seen.
    Unused,
    /// A transfer exists (done or Pending).
    Transfer,
    /// Seen and refused: no transfer, and none will be made under this key.
    Refused,
}

/// A process: a host and PID namespace, a pid, and whether it is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Process {
    pub pidns: u8,
    pub pid: u32,
    pub alive: bool,
}

/// What an actor does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Role {
    /// A journaled send of the request by a task of its process.
    Send,
    /// `journal recover` (`needs_operator`: a person's retry of entries waiting for them,
    /// with no deadline).
    Recover { needs_operator: bool },
    /// `journal abandon` by a person.
    Abandon,
}

/// Where an actor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Pc {
    /// Not started (a recovery: between two runs).
    Idle,
    /// Holds the lease with `token`, about to send (`resend`: the entry was recorded before).
    Held { token: i64, resend: bool },
    /// Its request is in flight.
    Waiting {
        token: i64,
        resend: bool,
        history: History,
    },
    /// An answer came (or the call ended without one).
    Answered {
        token: i64,
        resend: bool,
        history: History,
        answer: Answer,
    },
    /// Finished, or its process is gone.
    Done,
}

/// One actor: a task of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Actor {
    pub role: Role,
    pub process: u8,
    pub pc: Pc,
    /// What its caller was told.
    pub told: Option<Verdict>,
    /// Runs left (a recovery runs more than once).
    pub runs: u8,
}

/// The whole world.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct World {
    pub row: Option<Row<u8>>,
    pub service: Service,
    /// Requests in flight (sorted): the actor waiting for each answer ([`NOBODY`] once its
    /// call ended), and the actor that sent it.
    pub net: Vec<(u8, u8)>,
    pub processes: Vec<Process>,
    pub actors: Vec<Actor>,
    /// The journal's clock.
    pub now: i64,
    /// Faults left.
    pub faults: u8,
    /// Whether the recovery deadline was moved past.
    pub deadline_passed: bool,
    /// A recovery with the deadline sent the request after its deadline.
    pub sent_overdue: bool,
    /// The actor whose request made the transfer, once there is one.
    pub creator: Option<u8>,
    /// The caller whose attempt the entry is: its inserter, or the last caller to reopen it
    /// (a recovery's sends are on that caller's behalf).
    pub attempt: Option<u8>,
}

/// The model: its bounds and the actors they make.
pub(crate) struct Model {
    pub bounds: Bounds,
}

impl Model {
    fn holder_name(world: &World, process: u8) -> String {
        let p = world.processes[process as usize];
        format!(
            "host=box boot=b1 pidns=ns{} pid={} start=1 id={process}",
            p.pidns, p.pid
        )
    }

    /// Whether `viewer` can prove the holder `process` dead: [`owner::judge`] on what a
    /// process in `viewer`'s namespace sees.
    fn proved_dead(world: &World, viewer: u8, process: u8) -> bool {
        let ns = world.processes[viewer as usize].pidns;
        let stat = |pid: u32| match world
            .processes
            .iter()
            .find(|p| p.pid == pid && p.pidns == ns && p.alive)
        {
            Some(_) => Seen::Found(Stat {
                state: 'S',
                start: "1".to_owned(),
            }),
            None => Seen::Missing,
        };
        let threads = |_: u32| Some(2);
        owner::judge(
            &Self::holder_name(world, process),
            &View {
                host: "box".to_owned(),
                boot: Some("b1".to_owned()),
                pidns: Some(format!("ns{ns}")),
                proc_is_ours: true,
                proc_shows_every_process: true,
                stat: &stat,
                threads: &threads,
            },
        )
    }

    fn apply(world: &mut World, step: Step<u8>) -> bool {
        lifecycle::apply(&mut world.row, &step, world.now)
    }

    /// Every way actor `a` can move.
    fn actor_steps(&self, w: &World, a: usize, out: &mut Vec<(String, World)>) {
        let actor = w.actors[a];
        let who = format!("{:?}#{a}", actor.role).to_lowercase();
        let me = actor.process;
        match (actor.role, actor.pc) {
            (_, Pc::Done) => {}
            (Role::Send, Pc::Idle) => self.start_send(w, a, &who, out),
            (Role::Recover { needs_operator }, Pc::Idle) => {
                if actor.runs == 0 || !w.row.as_ref().is_some_and(|r| claimable(r, needs_operator))
                {
                    return;
                }
                let mut n = w.clone();
                n.actors[a].runs -= 1;
                free_if_dead(&mut n, me);
                let lease = Step::Claim {
                    holder: me,
                    lease: LEASE,
                    needs_operator,
                };
                if !Self::apply(&mut n, lease) {
                    out.push((format!("{who}: claim fails (leased)"), n));
                    return;
                }
                let row = n.row.clone().expect("claimed");
                let deadline = if needs_operator {
                    NO_DEADLINE
                } else {
                    DEADLINE
                };
                if lifecycle::overdue(row.created, deadline, n.now)
                    && !(needs_operator && row.state == State::NeedsOperator)
                {
                    Self::apply(
                        &mut n,
                        Step::ToOperator {
                            holder: me,
                            token: row.token,
                        },
                    );
                    out.push((format!("{who}: overdue, to the operator"), n));
                    return;
                }
                // A Pending entry, or one a person sends back, is read first: found, it is
                // confirmed; not found, sent again.
                if matches!(row.state, State::Pending | State::NeedsOperator)
                    && n.service == Service::Transfer
                {
                    Self::apply(
                        &mut n,
                        Step::Finish {
                            holder: me,
                            token: row.token,
                            state: State::Accepted,
                            mark: Mark::None,
                        },
                    );
                    out.push((format!("{who}: status read finds it, confirmed"), n));
                    return;
                }
                if !needs_operator && row.created + DEADLINE < n.now {
                    n.sent_overdue = true;
                }
                self.send(
                    &n,
                    a,
                    row.token,
                    true,
                    &format!("{who}: claimed {}, resends", row.state),
                    out,
                );
            }
            (Role::Abandon, Pc::Idle) => {
                // Assumed (and said in `Journal::abandon`'s documentation): no request of the
                // entry is still on its way when a person abandons it. The status read cannot
                // see one that arrives after it.
                if !w.net.is_empty() {
                    return;
                }
                let mut n = w.clone();
                n.actors[a].pc = Pc::Done;
                if w.row
                    .as_ref()
                    .is_none_or(|r| r.state != State::NeedsOperator)
                {
                    return;
                }
                free_if_dead(&mut n, me);
                let lease = Step::Claim {
                    holder: me,
                    lease: LEASE,
                    needs_operator: true,
                };
                if !Self::apply(&mut n, lease) {
                    out.push((format!("{who}: held elsewhere, left"), n));
                    return;
                }
                let token = n.row.as_ref().expect("claimed").token;
                if n.service == Service::Transfer {
                    Self::apply(&mut n, Step::Release { holder: me, token });
                    out.push((format!("{who}: the service received it, left"), n));
                } else {
                    Self::apply(
                        &mut n,
                        Step::Finish {
                            holder: me,
                            token,
                            state: State::Refused,
                            mark: Mark::Abandoned,
                        },
                    );
                    out.push((
                        format!("{who}: status read finds nothing, closed abandoned"),
                        n,
                    ));
                }
            }
            (_, Pc::Held { token, resend }) => {
                self.send(w, a, token, resend, &format!("{who}: sends"), out);
            }
            (_, Pc::Waiting { .. }) => {
                // Its answer comes with the delivery (`deliver`), or the call ends first.
                if w.faults > 0 {
                    for (what, answer) in [
                        ("times out", timeout()),
                        ("gets a proxy's 502 page", proxy_page()),
                    ] {
                        let mut n = w.clone();
                        n.faults -= 1;
                        untag(&mut n, a);
                        answered(&mut n, a, answer);
                        out.push((format!("{who}: {what} before the service answers"), n));
                    }
                }
            }
            (
                _,
                Pc::Answered {
                    token,
                    resend,
                    history,
                    answer,
                },
            ) => self.conclude(w, a, &who, token, resend, history, answer, out),
        }
    }

    /// A journaled send's start: record the request, or find it recorded.
    fn start_send(&self, w: &World, a: usize, who: &str, out: &mut Vec<(String, World)>) {
        let me = w.actors[a].process;
        let token = insert_token_from(1000 * (a as i64 + 1));
        let insert = Step::Insert {
            holder: me,
            token,
            lease: LEASE,
        };
        // The insert answers.
        let mut n = w.clone();
        if Self::apply(&mut n, insert.clone()) {
            n.attempt = Some(a as u8);
            n.actors[a].pc = Pc::Held {
                token,
                resend: false,
            };
            out.push((format!("{who}: records the request"), n));
        } else {
            self.found_recorded(&n, a, &format!("{who}: finds it recorded"), out);
        }
        if w.faults == 0 {
            return;
        }
        // The insert fails, or commits with its answer lost.
        for commits in [false, true] {
            let mut n = w.clone();
            n.faults -= 1;
            if commits {
                if !Self::apply(&mut n, insert.clone()) {
                    continue;
                }
                n.attempt = Some(a as u8);
            }
            let what = if commits {
                "its insert commits, the answer is lost"
            } else {
                "its insert fails"
            };
            match lifecycle::on_insert_error() {
                OnInsertError::ReportNothingSent => {
                    tell(&mut n, a, Verdict::NothingSent);
                    out.push((format!("{who}: {what}; told not-sent"), n));
                }
                OnInsertError::SettleFirst => {
                    let settle = Step::SettleLostInsert { holder: me, token };
                    // The settlement cannot be written either: an unknown outcome.
                    if n.faults > 0 {
                        let mut f = n.clone();
                        f.faults -= 1;
                        tell(&mut f, a, Verdict::Unknown);
                        out.push((format!("{who}: {what}; its settlement fails too"), f));
                    }
                    if Self::apply(&mut n, settle) {
                        tell(&mut n, a, Verdict::NothingSent);
                        out.push((format!("{who}: {what}; settled, told not-sent"), n));
                    } else {
                        self.found_recorded(
                            &n,
                            a,
                            &format!("{who}: {what}; another entry holds the key"),
                            out,
                        );
                    }
                }
            }
        }
    }

    /// A send that finds its key recorded: a resend of that request, or a reopen of one
    /// recorded as never sent; a refusal is final.
    fn found_recorded(&self, w: &World, a: usize, what: &str, out: &mut Vec<(String, World)>) {
        let me = w.actors[a].process;
        let mut n = w.clone();
        let Some(row) = n.row.clone() else {
            return;
        };
        if row.state == State::Refused && row.mark != Mark::NotSent {
            tell(&mut n, a, Verdict::Refused);
            out.push((format!("{what}, refused before; told refused"), n));
            return;
        }
        let reopen = row.state == State::Refused;
        let take = Step::Take {
            holder: me,
            lease: LEASE,
            reopen,
        };
        // The take's write fails, or commits with its answer lost: told what
        // `lifecycle::told_when_take_fails` says; the entry is whatever the write left.
        if w.faults > 0 {
            for commits in [false, true] {
                let mut f = n.clone();
                f.faults -= 1;
                if commits {
                    // Leased to a caller that gave up: nobody renews it, and it runs out.
                    if Self::apply(&mut f, take.clone()) && reopen {
                        f.attempt = Some(a as u8);
                    }
                }
                tell(&mut f, a, lifecycle::told_when_take_fails(reopen));
                let how = if commits {
                    "its take commits, the answer is lost"
                } else {
                    "its take fails"
                };
                out.push((format!("{what}; {how}"), f));
            }
        }
        if Self::apply(&mut n, take) {
            if reopen {
                n.attempt = Some(a as u8);
            }
            let token = n.row.as_ref().expect("taken").token;
            n.actors[a].pc = Pc::Held {
                token,
                resend: !reopen,
            };
            out.push((format!("{what}, takes its lease"), n));
        } else {
            tell(&mut n, a, Verdict::Unknown);
            out.push((format!("{what}, held by another; told unknown"), n));
        }
    }

    /// Put the request on the wire, or fail to connect.
    fn send(
        &self,
        w: &World,
        a: usize,
        token: i64,
        resend: bool,
        what: &str,
        out: &mut Vec<(String, World)>,
    ) {
        let history = if resend {
            History::MayHaveArrived
        } else {
            History::Fresh
        };
        let mut n = w.clone();
        n.net.push((a as u8, a as u8));
        n.net.sort_unstable();
        n.actors[a].pc = Pc::Waiting {
            token,
            resend,
            history,
        };
        out.push((what.to_owned(), n));
        if w.faults > 0 {
            let mut n = w.clone();
            n.faults -= 1;
            n.actors[a].pc = Pc::Answered {
                token,
                resend,
                history,
                answer: Answer::Transport {
                    may_have_reached: false,
                },
            };
            out.push((format!("{what}: cannot connect"), n));
        }
    }

    /// An answer read: the verdict, the status read that confirms an `already.done`, the
    /// outcome recorded under the lease, and what the caller is told.
    #[allow(clippy::too_many_arguments)]
    fn conclude(
        &self,
        w: &World,
        a: usize,
        who: &str,
        token: i64,
        resend: bool,
        history: History,
        answer: Answer,
        out: &mut Vec<(String, World)>,
    ) {
        let me = w.actors[a].process;
        let mut verdict = decide(history, answer);
        // The transfer client reads the status after `already.done` to a resend: found, the
        // request is confirmed.
        if verdict == Verdict::Unknown
            && matches!(
                answer,
                Answer::Refusal {
                    confirms_earlier: true,
                    ..
                }
            )
            && w.service == Service::Transfer
        {
            verdict = Verdict::Accepted;
        }
        let step = match lifecycle::state_after(verdict, resend) {
            Some(state) => Step::Finish {
                holder: me,
                token,
                state,
                mark: lifecycle::mark_of(verdict),
            },
            None => Step::Release { holder: me, token },
        };
        let mut outcomes = vec![(None, "recorded")];
        if w.faults > 0 {
            outcomes.push((Some(false), "its write fails"));
            outcomes.push((Some(true), "its write commits, the answer is lost"));
        }
        for (fault, how) in outcomes {
            let mut n = w.clone();
            let recorded = match fault {
                None if Self::apply(&mut n, step.clone()) => Recorded::Kept,
                None => Recorded::Lost,
                Some(commits) => {
                    n.faults -= 1;
                    if commits {
                        Self::apply(&mut n, step.clone());
                    }
                    Recorded::Failed
                }
            };
            let told = lifecycle::told(verdict, recorded);
            let label = format!("{who}: reads {verdict}, {how} ({recorded:?}); told {told}");
            match w.actors[a].role {
                Role::Send => tell(&mut n, a, told),
                _ => {
                    n.actors[a].told = Some(told);
                    n.actors[a].pc = if n.actors[a].runs > 0 {
                        Pc::Idle
                    } else {
                        Pc::Done
                    };
                }
            }
            out.push((label, n));
        }
    }

    /// The service takes request `i` of the network.
    fn deliver(&self, w: &World, i: usize, out: &mut Vec<(String, World)>) {
        let (waiter, sender) = w.net[i];
        if i > 0 && w.net[i - 1] == w.net[i] {
            return; // the same as the one before
        }
        let answers: Vec<(Service, Answer, &str)> = match w.service {
            Service::Unused => vec![
                (Service::Transfer, Answer::Success, "creates the transfer"),
                (Service::Transfer, Answer::Pending, "answers Pending"),
                (
                    Service::Refused,
                    Answer::Refusal {
                        confirms_earlier: false,
                        says_nothing_earlier: false,
                        is_final: true,
                    },
                    "refuses it",
                ),
            ],
            seen => vec![(
                seen,
                Answer::Refusal {
                    confirms_earlier: true,
                    says_nothing_earlier: false,
                    is_final: true,
                },
                "answers already.done",
            )],
        };
        for (service, answer, what) in answers {
            let mut n = w.clone();
            n.net.remove(i);
            if n.service == Service::Unused && service == Service::Transfer {
                n.creator = Some(sender);
            }
            n.service = service;
            let label = format!("service {what}");
            if waiter == NOBODY {
                out.push((format!("{label} (nobody waits)"), n));
                continue;
            }
            let a = waiter as usize;
            let mut got = n.clone();
            answered(&mut got, a, answer);
            out.push((format!("{label}; actor #{a} reads it"), got));
            if n.faults > 0 {
                for (lost, page) in [
                    ("the reply is lost", timeout()),
                    ("a proxy answers 502", proxy_page()),
                ] {
                    let mut got = n.clone();
                    got.faults -= 1;
                    answered(&mut got, a, page);
                    out.push((format!("{label}; {lost}"), got));
                }
            }
        }
    }
}

impl System for Model {
    type State = World;

    fn init(&self) -> World {
        let b = &self.bounds;
        // Process 0 sends (with `tasks` tasks); process 1 recovers, in another PID namespace
        // of a host with the same name; process 2 is a person's shell in the first namespace,
        // process 3 a person's shell in the second.
        let processes = vec![
            Process {
                pidns: 1,
                pid: 10,
                alive: true,
            },
            Process {
                pidns: 2,
                pid: 11,
                alive: true,
            },
            Process {
                pidns: 1,
                pid: 12,
                alive: true,
            },
            Process {
                pidns: 2,
                pid: 13,
                alive: true,
            },
        ];
        let actor = |role, process, runs| Actor {
            role,
            process,
            pc: Pc::Idle,
            told: None,
            runs,
        };
        let mut actors: Vec<Actor> = (0..b.tasks).map(|_| actor(Role::Send, 0, 1)).collect();
        actors.push(actor(
            Role::Recover {
                needs_operator: false,
            },
            1,
            b.recoveries,
        ));
        if b.person {
            actors.push(actor(
                Role::Recover {
                    needs_operator: true,
                },
                2,
                1,
            ));
            actors.push(actor(Role::Abandon, 3, 1));
        }
        World {
            row: None,
            service: Service::Unused,
            net: Vec::new(),
            processes,
            actors,
            now: 0,
            faults: b.faults,
            deadline_passed: false,
            sent_overdue: false,
            creator: None,
            attempt: None,
        }
    }

    fn next(&self, w: &World, out: &mut Vec<(String, World)>) {
        for a in 0..w.actors.len() {
            self.actor_steps(w, a, out);
        }
        for i in 0..w.net.len() {
            self.deliver(w, i, out);
        }
        // A lease never runs out while a process is between taking it and sending. Assumed: no
        // process freezes a whole lease in that instant (nothing can fence a request already
        // on its way; the heartbeat keeps the lease of a slow call once it is out).
        let about_to_send = w.actors.iter().any(|x| matches!(x.pc, Pc::Held { .. }));
        let in_network = !w.net.is_empty();
        let quiet = !in_network && !about_to_send;
        // A lease runs out. Time passing when nobody renews it and nothing is in the network:
        // its holder is dead, or none of the holder's tasks holds it (a call that ended, a write
        // that committed unseen). A fault when a task of a live holder holds it (frozen, or its
        // renewals slowed by a busy database), or while a request or an answer is still in the
        // network: the holder's answer then comes back after another process took the entry
        // over and sent it again under the same key.
        if !about_to_send
            && let Some(r) = &w.row
            && let (Some(h), Some(until)) = (r.holder, r.until)
            && until >= w.now
        {
            let renewing = w.processes[h as usize].alive
                && w.actors.iter().any(|x| {
                    x.process == h
                        && match x.pc {
                            Pc::Held { token, .. }
                            | Pc::Waiting { token, .. }
                            | Pc::Answered { token, .. } => token == r.token,
                            _ => false,
                        }
                });
            let fault = renewing || in_network;
            if !fault || w.faults > 0 {
                let mut n = w.clone();
                if fault {
                    n.faults -= 1;
                }
                n.now = until + 1;
                let why = if renewing {
                    "frozen"
                } else if in_network {
                    "while a request or answer is on its way"
                } else {
                    "nobody renews it"
                };
                out.push((format!("process {h}'s lease runs out ({why})"), n));
            }
        }
        if w.faults > 0 {
            // A process is killed.
            for (p, process) in w.processes.iter().enumerate() {
                let busy = w
                    .actors
                    .iter()
                    .any(|x| x.process as usize == p && x.pc != Pc::Done);
                if process.alive && busy {
                    let mut n = w.clone();
                    n.faults -= 1;
                    n.processes[p].alive = false;
                    for (i, x) in n.actors.iter_mut().enumerate() {
                        if x.process as usize == p {
                            x.pc = Pc::Done;
                            for m in n.net.iter_mut() {
                                if m.0 as usize == i {
                                    m.0 = NOBODY;
                                }
                            }
                        }
                    }
                    n.net.sort_unstable();
                    out.push((format!("process {p} is killed"), n));
                }
            }
            // A request is lost in the network before the service sees it.
            for i in 0..w.net.len() {
                if i > 0 && w.net[i - 1] == w.net[i] {
                    continue;
                }
                let mut n = w.clone();
                n.faults -= 1;
                let (waiter, _) = n.net.remove(i);
                if waiter != NOBODY {
                    answered(&mut n, waiter as usize, timeout());
                }
                out.push(("a request is lost on the way".to_owned(), n));
            }
        }
        // The recovery deadline passes. Assumed: no request stays that long in the network, nor
        // in a process frozen between taking its lease and sending (the deadline is a day).
        if self.bounds.deadline && !w.deadline_passed && quiet && w.row.is_some() {
            let mut n = w.clone();
            n.deadline_passed = true;
            n.now += DEADLINE + 1;
            // A live holder's heartbeat keeps its lease all that time.
            if let Some(r) = &w.row
                && let (Some(h), Some(until)) = (r.holder, r.until)
                && w.processes[h as usize].alive
                && until >= w.now
            {
                let renew = Step::Renew {
                    holder: h,
                    token: r.token,
                    lease: LEASE,
                };
                Self::apply(&mut n, renew);
            }
            out.push(("the recovery deadline passes".to_owned(), n));
        }
    }

    fn violation(&self, w: &World, terminal: bool) -> Option<String> {
        let transfer = w.service == Service::Transfer;
        let may_still_arrive = w.service == Service::Unused && !w.net.is_empty();
        for (a, actor) in w.actors.iter().enumerate() {
            match actor.told {
                Some(Verdict::Refused) if transfer => {
                    return Some(format!(
                        "actor #{a} was told refused, but the service holds the transfer"
                    ));
                }
                // Nothing sent by this call: a transfer, if any, comes of another caller's own
                // new send of the request (a reopen), never of this call's attempt (sent by
                // this call, another task's resend or a recovery).
                Some(Verdict::NothingSent) if transfer && w.attempt == Some(a as u8) => {
                    return Some(format!(
                        "actor #{a} was told nothing was sent, but its attempt made the transfer (sent by actor #{})",
                        w.creator.unwrap_or(NOBODY)
                    ));
                }
                Some(Verdict::Accepted) if !transfer => {
                    return Some(format!(
                        "actor #{a} was told accepted, but the service holds no transfer"
                    ));
                }
                _ => {}
            }
        }
        if let Some(r) = &w.row
            && r.state == State::Refused
            && (transfer || may_still_arrive)
        {
            return Some(format!(
                "the entry is closed refused ({:?}) while the service {}",
                r.mark,
                if transfer {
                    "holds its transfer"
                } else {
                    "can still receive it"
                }
            ));
        }
        if w.sent_overdue {
            return Some("a recovery sent the request after its deadline".to_owned());
        }
        if terminal {
            return self.left_open(w);
        }
        None
    }
}

impl Model {
    /// Once nothing can move: a recovery run after every process is gone, with nothing going
    /// wrong, and another once the deadline has passed, must leave the entry closed or with a
    /// person.
    fn left_open(&self, w: &World) -> Option<String> {
        let mut n = w.clone();
        for _ in 0..2 {
            if !n.row.as_ref().is_some_and(|r| r.state.is_open()) {
                return None;
            }
            n.now = n
                .row
                .as_ref()
                .and_then(|r| r.until)
                .unwrap_or(n.now)
                .max(n.now)
                + 1;
            let claim = Step::Claim {
                holder: 3,
                lease: LEASE,
                needs_operator: false,
            };
            if !Self::apply(&mut n, claim) {
                break;
            }
            let row = n.row.clone().expect("claimed");
            let state = if lifecycle::overdue(row.created, DEADLINE, n.now) {
                State::NeedsOperator
            } else if n.service == Service::Refused {
                // A resend is answered `already.done` and the status finds no transfer: it
                // stays open until its deadline.
                n.now += DEADLINE + 1;
                Self::apply(
                    &mut n,
                    Step::Release {
                        holder: 3,
                        token: row.token,
                    },
                );
                continue;
            } else {
                n.service = Service::Transfer;
                State::Accepted
            };
            Self::apply(
                &mut n,
                Step::Finish {
                    holder: 3,
                    token: row.token,
                    state,
                    mark: Mark::None,
                },
            );
        }
        n.row
            .as_ref()
            .filter(|r| r.state.is_open())
            .map(|r| format!("the entry is left {} once every process is gone", r.state))
    }
}

fn claimable(row: &Row<u8>, needs_operator: bool) -> bool {
    row.state.is_open() || (needs_operator && row.state == State::NeedsOperator)
}

/// Free the lease of a holder that `viewer` proves dead.
fn free_if_dead(w: &mut World, viewer: u8) {
    let Some(r) = &w.row else { return };
    if let (Some(h), Some(until)) = (r.holder, r.until)
        && h != viewer
        && until >= w.now
        && Model::proved_dead(w, viewer, h)
    {
        let token = r.token;
        Model::apply(w, Step::ReleaseDead { holder: h, token });
    }
}

fn timeout() -> Answer {
    Answer::Transport {
        may_have_reached: true,
    }
}

fn proxy_page() -> Answer {
    Answer::NoEnvelope {
        status: 502,
        from_service: false,
    }
}

/// The actor's request in the network is nobody's any more (its call ended).
fn untag(w: &mut World, a: usize) {
    if let Some(m) = w.net.iter_mut().find(|m| m.0 as usize == a) {
        m.0 = NOBODY;
    }
    w.net.sort_unstable();
}

fn answered(w: &mut World, a: usize, answer: Answer) {
    if let Pc::Waiting {
        token,
        resend,
        history,
    } = w.actors[a].pc
    {
        w.actors[a].pc = Pc::Answered {
            token,
            resend,
            history,
            answer,
        };
    }
}

fn tell(w: &mut World, a: usize, verdict: Verdict) {
    w.actors[a].told = Some(verdict);
    w.actors[a].pc = Pc::Done;
}
