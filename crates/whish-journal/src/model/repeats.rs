//! The repeat check: processes sending one body under Request-ids of their own, at once, on one
//! journal, each checking the journal for that body before it records and sends (as `whish
//! transfer send` and `transfer resend` do), with crashes and failed writes at every step.
//!
//! The steps are the order the command takes them in (`checked` in the CLI): take the repeat
//! check's lock ([`Journal::lock_repeat_check`](crate::Journal::lock_repeat_check)), look for
//! the body under another Request-id, record the intent under the lock
//! ([`JournaledTransfer::reserve_under`](crate::JournaledTransfer::reserve_under): when its
//! write fails, the request is given back and nothing is sent), let the lock go, send, record
//! the answer. Which entries a check counts is the
//! production rule ([`may_have_paid`], and for a send, not final). The lock is the operating
//! system's or the server's: a process that dies lets it go, and a PostgreSQL session that
//! ends lets it go while its process runs on (a lapse). The intent is written on that session,
//! so after a lapse the write fails.
//!
//! The invariant: two transfers of the body exist, or may yet (an entry left open by a process
//! that died: recovery sends it under its own Request-id), only when one was sent on purpose
//! (`--allow-repeat`) or when one of the two processes checked after the other's transfer was
//! recorded accepted (the same payment made again once the first is known: the command's rule).
//!
//! A process may start from an entry of its own recorded as never sent (a run stopped before
//! it sent: `never_left_first`), which no check counts. Its reservation under the lock
//! records it afresh (a new entry, open, which every later check reads), as
//! [`Db::reserve`](crate::store::Db::reserve) does; with `reopened_under_lock` off the entry
//! is reopened by the send instead, after the lock is let go (the order before 2026-11-28,
//! which the checker must find paying twice).
//!
//! A failed intent's write comes in three kinds: one that proves it never committed (the
//! database was busy, locked or full, or no connection was had), one that committed with its
//! answer lost, and one that proves nothing and left no entry to read (an I/O error after
//! SQLite wrote the WAL's frames: invisible now, they come back when the journal is next
//! opened after every process that had it open is gone, unless a later write wrote over
//! them). The give-back takes the steps
//! of [`JournaledTransfer::unreserve`](crate::JournaledTransfer::unreserve): an entry of its
//! own lease is recorded never sent; no entry, and one is recorded never sent (a commit, which
//! writes over the frames); its earlier entry recorded never sent, which a failed reservation
//! was to record afresh, is left as it was (nothing written), and the caller is told "never
//! sent" only after a failure of the first kind, else "unknown: a recovery may send it". The
//! settlement's own write may fail too. With `trusts_any_failure` on, the give-back takes any
//! failure as proof (the rule before 2026-11-28), and the checker must find a process told
//! "never sent" whose request a recovery then pays.

use crate::entry::{State, may_have_paid};

use super::explore::System;

/// What a process is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// `transfer send`: counts the sends still open.
    Send,
    /// `transfer resend` under a Request-id the journal does not hold: counts the sends open
    /// or accepted.
    Resend,
    /// `transfer send --allow-repeat`: checks nothing.
    AllowRepeat,
}

/// Where a process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Pc {
    /// About to take the lock (or, checking nothing, to record).
    Start,
    /// Holding the lock: about to check.
    Check,
    /// Checked, nothing found: about to record the intent.
    Reserve,
    /// The intent's write failed: about to give the request back (its entry, if the write
    /// committed, recorded as never sent; see the module's doc), then let the lock go.
    GiveBack,
    /// Recorded: about to let the lock go.
    Release,
    /// About to send.
    Send,
    /// Sent, about to record the answer.
    Answer,
    /// Refused by the check, finished, or dead.
    Done,
}

/// One process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Proc {
    pub kind: Kind,
    pub pc: Pc,
    /// Its entry in the journal, under its own Request-id.
    pub entry: Option<State>,
    /// A transfer exists under its Request-id.
    pub paid: bool,
    /// The processes whose entry its check saw accepted (a bit each).
    pub saw_accepted: u8,
    /// Its check has run.
    pub checked: bool,
    /// The lock it holds lapsed without its knowing.
    pub lapsed: bool,
    /// Its entry, recorded never sent, is still to be reopened: by its send.
    pub reopens: bool,
    /// Dead.
    pub dead: bool,
    /// Its intent's write failed in a way that proves nothing (not that it never committed).
    pub unproven: bool,
    /// That write's frames, invisible, may come back as its open entry when the journal is
    /// next opened after a crash.
    pub ghost: bool,
    /// It told its caller the request was never sent.
    pub told_never_sent: bool,
}

impl Proc {
    /// A transfer exists under its Request-id, or will once recovery sends its open entry.
    /// An open entry is sent by recovery once its process died, or finished without closing
    /// it (a give-back that answered "unknown").
    fn may_be_paid(&self) -> bool {
        self.paid
            || ((self.dead || self.pc == Pc::Done) && self.entry.is_some_and(|s| !s.is_final()))
    }
}

/// How a failed intent's write failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// Proves the write never committed.
    NeverCommitted,
    /// Committed; its answer was lost.
    Committed,
    /// Proves nothing, and left no entry to read now (its frames may come back).
    Unproven,
}

/// A write committed (or wrote its frames and failed): the frames of every earlier failed
/// write are written over (SQLite appends after the last commit the WAL's index knows).
fn committed(n: &mut World) {
    for q in &mut n.procs {
        q.ghost = false;
    }
}

/// The whole system.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct World {
    pub procs: Vec<Proc>,
    /// Which process holds the lock.
    pub lock: Option<u8>,
    /// Faults left.
    pub faults: u8,
}

/// The processes, the faults, and whether the lock is taken at all (false: the order before
/// the lock, which the checker must find paying twice).
pub(crate) struct Repeats {
    pub kinds: Vec<Kind>,
    pub faults: u8,
    pub locked: bool,
    /// A held lock may lapse (PostgreSQL's; SQLite's lasts as long as its process).
    pub lapses: bool,
    /// The intent is written on the lock's own session (false: on another connection, where a
    /// lapse goes unnoticed; the checker must find that paying twice).
    pub on_lock_session: bool,
    /// Every process starts from an entry of its own recorded as never sent.
    pub never_left_first: bool,
    /// The reservation records such an entry afresh, under the lock (false: the send reopens
    /// it after the lock is let go; the checker must find that paying twice).
    pub reopened_under_lock: bool,
    /// The give-back takes any failed write as proof that it never committed (the rule
    /// before 2026-11-28; the checker must find a process told "never sent" then paid).
    pub trusts_any_failure: bool,
}

/// Whether a check of `kind` counts an entry in `state` as the body sent before (the CLI's
/// `Counted`: a send counts those still open, a resend those open or accepted).
fn counted(kind: Kind, state: State) -> bool {
    match kind {
        Kind::Send => may_have_paid(state) && !state.is_final(),
        Kind::Resend => may_have_paid(state),
        Kind::AllowRepeat => false,
    }
}

impl Repeats {
    fn step(&self, w: &World, i: usize, out: &mut Vec<(String, World)>) {
        let p = w.procs[i];
        let me = i as u8;
        let mut go = |label: String, f: &dyn Fn(&mut World)| {
            let mut next = w.clone();
            f(&mut next);
            out.push((format!("p{i} {:?}: {label}", p.kind), next));
        };
        let holds = w.lock == Some(me);
        match p.pc {
            Pc::Start if p.kind == Kind::AllowRepeat || !self.locked => {
                let to = if p.kind == Kind::AllowRepeat {
                    Pc::Reserve
                } else {
                    Pc::Check
                };
                go("starts".into(), &|n| n.procs[i].pc = to);
            }
            Pc::Start if w.lock.is_none() => {
                go("takes the lock".into(), &|n| {
                    n.lock = Some(me);
                    n.procs[i].pc = Pc::Check;
                });
            }
            Pc::Start => {}
            Pc::Check => {
                let (found, saw) = look(w, i);
                let label = if found {
                    "checks: the body is held elsewhere, refused"
                } else {
                    "checks: nothing found"
                };
                go(label.into(), &|n| {
                    let q = &mut n.procs[i];
                    q.checked = true;
                    q.saw_accepted = saw;
                    q.pc = if found { Pc::Done } else { Pc::Reserve };
                    if found && holds {
                        n.lock = None;
                    }
                });
            }
            Pc::Reserve => {
                let release = if self.locked && p.kind != Kind::AllowRepeat {
                    Pc::Release
                } else {
                    Pc::Send
                };
                // Written on the lock's session: after a lapse, the write fails.
                if !p.lapsed || !self.on_lock_session {
                    // An entry recorded never sent is recorded afresh, or (the order before)
                    // left for the send to reopen.
                    let afresh = p.entry.is_none() || self.reopened_under_lock;
                    go("records the intent".into(), &|n| {
                        if afresh {
                            n.procs[i].entry = Some(State::Intended);
                            committed(n);
                        } else {
                            n.procs[i].reopens = true;
                        }
                        n.procs[i].pc = release;
                    });
                }
                if w.faults > 0 || (p.lapsed && self.on_lock_session) {
                    // A write on a session that ended never committed; another failed write
                    // may have, or may prove nothing.
                    let lapsed = p.lapsed && self.on_lock_session;
                    for how in [
                        Failure::NeverCommitted,
                        Failure::Committed,
                        Failure::Unproven,
                    ] {
                        if lapsed && how != Failure::NeverCommitted {
                            continue;
                        }
                        go(format!("its intent's write fails ({how:?})"), &|n| {
                            if !lapsed {
                                n.faults -= 1;
                            }
                            n.procs[i].pc = Pc::GiveBack;
                            n.procs[i].unproven = how != Failure::NeverCommitted;
                            match how {
                                Failure::NeverCommitted => {}
                                Failure::Committed => {
                                    n.procs[i].entry = Some(State::Intended);
                                    committed(n);
                                }
                                // Its frames are written where any earlier failed write's
                                // were: only the newest can come back.
                                Failure::Unproven => {
                                    committed(n);
                                    n.procs[i].ghost = true;
                                }
                            }
                        });
                    }
                }
            }
            Pc::GiveBack => {
                let done = |n: &mut World| {
                    n.procs[i].pc = Pc::Done;
                    if n.lock == Some(me) {
                        n.lock = None;
                    }
                };
                let never_sent = |n: &mut World| {
                    n.procs[i].told_never_sent = true;
                    done(n);
                };
                // Without an entry of its own, the answer rests on the failure: proven, or (the
                // rule before) taken as proven.
                let proven = !p.unproven || self.trusts_any_failure;
                match p.entry {
                    // Its own reservation, committed (or come back): settled under its lease.
                    Some(State::Intended) => {
                        go("gives it back: recorded never sent".into(), &|n| {
                            n.procs[i].entry = Some(State::Refused);
                            committed(n);
                            never_sent(n);
                        });
                    }
                    // No entry: the settlement records one, never sent.
                    None => {
                        go("finds no entry: records it never sent".into(), &|n| {
                            n.procs[i].entry = Some(State::Refused);
                            committed(n);
                            never_sent(n);
                        });
                    }
                    // Its earlier entry, recorded never sent, which the failed reservation was
                    // to record afresh: the settlement leaves it (not its lease), and writes
                    // nothing.
                    Some(_) if proven => {
                        go(
                            "finds its earlier entry as it was: never sent".into(),
                            &never_sent,
                        );
                    }
                    Some(_) => go(
                        "finds its earlier entry, but the failure proves nothing: unknown".into(),
                        &done,
                    ),
                }
                if w.faults > 0 && p.entry != Some(State::Refused) {
                    // The settlement's write fails too: an entry of its own stays open; with
                    // none, only a proven failure still says never sent.
                    let label = if p.entry.is_none() && proven {
                        "its settlement fails; the failure proved nothing was written: never sent"
                    } else {
                        "its settlement fails: unknown, a recovery may send it"
                    };
                    let told = p.entry.is_none() && proven;
                    go(label.into(), &|n| {
                        n.faults -= 1;
                        if told {
                            never_sent(n);
                        } else {
                            done(n);
                        }
                    });
                }
            }
            Pc::Release => go("lets the lock go".into(), &|n| {
                if n.lock == Some(me) {
                    n.lock = None;
                }
                n.procs[i].pc = Pc::Send;
            }),
            Pc::Send => {
                let label = if p.reopens {
                    "reopens its entry and sends: the service pays"
                } else {
                    "sends: the service pays"
                };
                go(label.into(), &|n| {
                    if n.procs[i].reopens {
                        n.procs[i].entry = Some(State::Intended);
                        committed(n);
                    }
                    n.procs[i].paid = true;
                    n.procs[i].pc = Pc::Answer;
                });
                go("sends: the service refuses".into(), &|n| {
                    n.procs[i].entry = Some(State::Refused);
                    committed(n);
                    n.procs[i].pc = Pc::Answer;
                });
            }
            Pc::Answer => go("records the answer".into(), &|n| {
                n.procs[i].pc = Pc::Done;
                if n.procs[i].paid {
                    n.procs[i].entry = Some(State::Accepted);
                    committed(n);
                }
            }),
            Pc::Done => {}
        }
        // SQLite rebuilds the WAL's index, and reads the frames of a failed write not written
        // over since as committed, when the journal is opened after every process that had it
        // open is gone (unless the last one checkpointed and removed the log as it closed,
        // which a process that exits without closing its journal, or dies, never does).
        if p.ghost && w.procs.iter().all(|q| q.pc == Pc::Done) {
            go(
                "the journal is reopened after a crash: its failed write's entry comes back".into(),
                &|n| {
                    n.procs[i].ghost = false;
                    n.procs[i].entry = Some(State::Intended);
                },
            );
        }
        if w.faults > 0 {
            // A crash anywhere before the end: the system lets its lock go, and its entry stays
            // as it is (an open one is sent by recovery under its own Request-id).
            if p.pc != Pc::Done {
                go("dies".into(), &|n| {
                    n.faults -= 1;
                    n.procs[i].pc = Pc::Done;
                    n.procs[i].dead = true;
                    if n.lock == Some(me) {
                        n.lock = None;
                    }
                });
            }
            // The lock's session ends (a PostgreSQL server restarted, a connection cut): the
            // lock goes, and the process does not know yet.
            if holds && self.lapses {
                go("its lock lapses".into(), &|n| {
                    n.faults -= 1;
                    n.lock = None;
                    n.procs[i].lapsed = true;
                });
            }
        }
    }
}

/// What process `i`'s check finds: whether it counts an entry of another process as the body
/// sent before, and which of them it sees accepted.
fn look(w: &World, i: usize) -> (bool, u8) {
    let kind = w.procs[i].kind;
    let mut saw = 0u8;
    let mut found = false;
    for (j, q) in w.procs.iter().enumerate() {
        if j == i {
            continue;
        }
        if let Some(state) = q.entry {
            found |= counted(kind, state);
            if state == State::Accepted {
                saw |= 1 << j;
            }
        }
    }
    (found, saw)
}

impl System for Repeats {
    type State = World;

    fn init(&self) -> World {
        World {
            procs: self
                .kinds
                .iter()
                .map(|&kind| Proc {
                    kind,
                    pc: Pc::Start,
                    // Recorded never sent: refused, which no check counts.
                    entry: self.never_left_first.then_some(State::Refused),
                    paid: false,
                    saw_accepted: 0,
                    checked: false,
                    lapsed: false,
                    reopens: false,
                    dead: false,
                    unproven: false,
                    ghost: false,
                    told_never_sent: false,
                })
                .collect(),
            lock: None,
            faults: self.faults,
        }
    }

    fn next(&self, w: &World, out: &mut Vec<(String, World)>) {
        for i in 0..w.procs.len() {
            self.step(w, i, out);
        }
    }

    fn violation(&self, w: &World, _terminal: bool) -> Option<String> {
        for (i, p) in w.procs.iter().enumerate() {
            if p.told_never_sent && p.may_be_paid() {
                return Some(format!(
                    "p{i} was told its request was never sent, yet a transfer of it exists or may yet"
                ));
            }
            for (j, q) in w.procs.iter().enumerate().skip(i + 1) {
                let on_purpose = p.kind == Kind::AllowRepeat || q.kind == Kind::AllowRepeat;
                let known = p.saw_accepted & (1 << j) != 0 || q.saw_accepted & (1 << i) != 0;
                if p.may_be_paid() && q.may_be_paid() && !on_purpose && !known {
                    return Some(format!(
                        "the body was paid twice (p{i} and p{j}), neither knowing of the other's transfer"
                    ));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::explore::explore;
    use super::*;

    fn every_mix() -> Vec<Vec<Kind>> {
        use Kind::*;
        vec![
            vec![Send, Send, Send],
            vec![Send, Resend, Send],
            vec![Resend, Resend, Send],
            vec![Send, AllowRepeat, Resend],
        ]
    }

    #[test]
    fn with_the_lock_no_body_is_paid_twice_unknowingly() {
        for (kinds, never_left_first) in every_mix()
            .into_iter()
            .flat_map(|k| [(k.clone(), false), (k, true)])
        {
            let system = Repeats {
                kinds: kinds.clone(),
                faults: 2,
                locked: true,
                lapses: true,
                on_lock_session: true,
                never_left_first,
                reopened_under_lock: true,
                trusts_any_failure: false,
            };
            let found = explore(&system, 1_000_000);
            assert!(!found.cut, "{kinds:?} ({never_left_first}): complete");
            assert!(
                found.violation.is_none(),
                "{kinds:?} ({never_left_first}): {:?}",
                found.violation
            );
            assert!(
                found.states > 100,
                "{kinds:?} ({never_left_first}): {} states",
                found.states
            );
        }
    }

    #[test]
    fn without_the_lock_the_checker_finds_a_body_paid_twice() {
        let system = Repeats {
            kinds: vec![Kind::Send, Kind::Send],
            faults: 0,
            locked: false,
            lapses: false,
            on_lock_session: true,
            never_left_first: false,
            reopened_under_lock: true,
            trusts_any_failure: false,
        };
        let (what, trace) = explore(&system, 1_000_000).violation.expect("found");
        assert!(what.contains("paid twice"), "{what}");
        // Both check before either records.
        let last_check = trace.iter().rposition(|s| s.contains("checks"));
        let first_record = trace.iter().position(|s| s.contains("records the intent"));
        assert!(last_check < first_record, "{trace:?}");
    }

    #[test]
    fn an_intent_written_off_the_lock_session_is_found_paying_twice() {
        let system = Repeats {
            kinds: vec![Kind::Send, Kind::Send],
            faults: 2,
            locked: true,
            lapses: true,
            on_lock_session: false,
            never_left_first: false,
            reopened_under_lock: true,
            trusts_any_failure: false,
        };
        let (what, trace) = explore(&system, 1_000_000).violation.expect("found");
        assert!(what.contains("paid twice"), "{what}");
        assert!(trace.iter().any(|s| s.contains("lapses")), "{trace:?}");
    }

    #[test]
    fn entries_left_unsent_reopened_after_the_lock_are_found_paying_twice() {
        let system = Repeats {
            kinds: vec![Kind::Send, Kind::Send],
            faults: 0,
            locked: true,
            lapses: false,
            on_lock_session: true,
            never_left_first: true,
            reopened_under_lock: false,
            trusts_any_failure: false,
        };
        let (what, trace) = explore(&system, 1_000_000).violation.expect("found");
        assert!(what.contains("paid twice"), "{what}");
        // The second check runs after the first lets the lock go, before its send reopens.
        let checks: Vec<_> = trace
            .iter()
            .enumerate()
            .filter(|(_, s)| s.contains("checks: nothing found"))
            .map(|(i, _)| i)
            .collect();
        let reopen = trace
            .iter()
            .position(|s| s.contains("reopens"))
            .expect("reopened");
        assert_eq!(checks.len(), 2, "{trace:?}");
        assert!(checks[1] < reopen, "{trace:?}");
    }

    #[test]
    fn a_give_back_that_trusts_any_failed_write_is_found_telling_never_sent_then_paid() {
        // Two processes, from entries recorded never sent: the frames come back once both are
        // gone.
        let system = Repeats {
            kinds: vec![Kind::Send, Kind::Send],
            faults: 2,
            locked: true,
            lapses: false,
            on_lock_session: true,
            never_left_first: true,
            reopened_under_lock: true,
            trusts_any_failure: true,
        };
        let (what, trace) = explore(&system, 1_000_000).violation.expect("found");
        assert!(what.contains("told its request was never sent"), "{what}");
        // The write failed proving nothing, was taken as never committed, then came back.
        let failed = trace.iter().position(|s| s.contains("fails (Unproven)"));
        let back = trace.iter().position(|s| s.contains("comes back"));
        assert!(failed.is_some() && failed < back, "{trace:?}");
    }
}
