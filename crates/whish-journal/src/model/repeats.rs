//! The repeat check: processes sending one body under Request-ids of their own, at once, on one
//! journal, each checking the journal for that body before it records and sends (as `whish
//! transfer send` and `transfer resend` do), with crashes and failed writes at every step.
//!
//! The steps are the order the command takes them in (`checked` in the CLI): take the repeat
//! check's lock ([`Journal::lock_repeat_check`](crate::Journal::lock_repeat_check)), look for
//! the body under another Request-id, record the intent (a reservation; when its write fails,
//! the send records the intent itself and the lock is kept until it has), let the lock go,
//! send, record the answer. Which entries a check counts is the production rule
//! ([`may_have_paid`], and for a send, not final). The lock is the operating system's or the
//! server's: a process that dies lets it go.
//!
//! The invariant: two transfers of the body exist only when one was sent on purpose
//! (`--allow-repeat`) or when one of the two processes checked after the other's transfer was
//! recorded accepted (the same payment made again once the first is known: the command's rule).

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
    /// Recorded: about to let the lock go.
    Release,
    /// The reservation's write failed (it may have committed): the send records the intent
    /// itself, holding the lock until it has.
    RecordItself,
    /// About to send.
    Send,
    /// Sent: the lock still held (recorded by the send itself), about to let it go.
    ReleaseAfterSend,
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
                let mut saw = 0u8;
                let mut found = false;
                for (j, q) in w.procs.iter().enumerate() {
                    if j == i {
                        continue;
                    }
                    if let Some(state) = q.entry {
                        found |= counted(p.kind, state);
                        if state == State::Accepted {
                            saw |= 1 << j;
                        }
                    }
                }
                go(
                    if found {
                        "checks: the body is held elsewhere, refused".into()
                    } else {
                        "checks: nothing found".into()
                    },
                    &|n| {
                        let q = &mut n.procs[i];
                        q.checked = true;
                        q.saw_accepted = saw;
                        q.pc = if found { Pc::Done } else { Pc::Reserve };
                        if found && holds {
                            n.lock = None;
                        }
                    },
                );
            }
            Pc::Reserve => {
                let release = if holds { Pc::Release } else { Pc::Send };
                go("records the intent".into(), &|n| {
                    n.procs[i].entry = Some(State::Intended);
                    n.procs[i].pc = release;
                });
                if w.faults > 0 {
                    for committed in [false, true] {
                        go(
                            format!("its intent's write fails (committed: {committed})"),
                            &|n| {
                                n.faults -= 1;
                                if committed {
                                    n.procs[i].entry = Some(State::Intended);
                                }
                                n.procs[i].pc = Pc::RecordItself;
                            },
                        );
                    }
                }
            }
            Pc::Release => go("lets the lock go".into(), &|n| {
                n.lock = None;
                n.procs[i].pc = Pc::Send;
            }),
            Pc::RecordItself => go("records the intent as it sends".into(), &|n| {
                n.procs[i].entry = Some(State::Intended);
                n.procs[i].pc = Pc::Send;
            }),
            Pc::Send => {
                let after = if holds {
                    Pc::ReleaseAfterSend
                } else {
                    Pc::Answer
                };
                go("sends: the service pays".into(), &|n| {
                    n.procs[i].paid = true;
                    n.procs[i].pc = after;
                });
                go("sends: the service refuses".into(), &|n| {
                    n.procs[i].entry = Some(State::Refused);
                    n.procs[i].pc = after;
                });
            }
            Pc::ReleaseAfterSend => go("lets the lock go".into(), &|n| {
                n.lock = None;
                n.procs[i].pc = Pc::Answer;
            }),
            Pc::Answer => go("records the answer".into(), &|n| {
                let q = &mut n.procs[i];
                if q.paid {
                    q.entry = Some(State::Accepted);
                }
                q.pc = Pc::Done;
            }),
            Pc::Done => {}
        }
        // A crash anywhere before the end: the system lets its lock go, and its entry stays as
        // it is (an open one is finished by recovery under the same Request-id: no new
        // transfer).
        if p.pc != Pc::Done && w.faults > 0 {
            go("dies".into(), &|n| {
                n.faults -= 1;
                n.procs[i].pc = Pc::Done;
                if n.lock == Some(me) {
                    n.lock = None;
                }
            });
        }
    }
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
                    entry: None,
                    paid: false,
                    saw_accepted: 0,
                    checked: false,
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
            for (j, q) in w.procs.iter().enumerate().skip(i + 1) {
                let on_purpose = p.kind == Kind::AllowRepeat || q.kind == Kind::AllowRepeat;
                let known = p.saw_accepted & (1 << j) != 0 || q.saw_accepted & (1 << i) != 0;
                if p.paid && q.paid && !on_purpose && !known {
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
        for kinds in every_mix() {
            let system = Repeats {
                kinds: kinds.clone(),
                faults: 2,
                locked: true,
            };
            let found = explore(&system, 1_000_000);
            assert!(!found.cut, "{kinds:?}: complete");
            assert!(
                found.violation.is_none(),
                "{kinds:?}: {:?}",
                found.violation
            );
            assert!(found.states > 100, "{kinds:?}: {} states", found.states);
        }
    }

    #[test]
    fn without_the_lock_the_checker_finds_a_body_paid_twice() {
        let system = Repeats {
            kinds: vec![Kind::Send, Kind::Send],
            faults: 0,
            locked: false,
        };
        let (what, trace) = explore(&system, 1_000_000).violation.expect("found");
        assert!(what.contains("paid twice"), "{what}");
        // Both check before either records.
        let last_check = trace.iter().rposition(|s| s.contains("checks"));
        let first_record = trace.iter().position(|s| s.contains("records the intent"));
        assert!(last_check < first_record, "{trace:?}");
    }
}
