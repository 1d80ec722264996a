//! The one decision of what happened to a request: did the service act on it?
//!
//! Every layer reads this answer and none makes its own: the clients' `Err` predicates
//! ([`Error::is_pending`](crate::Error::is_pending), [`outcome_unknown`](crate::Error::outcome_unknown),
//! [`nothing_sent`](crate::Error::nothing_sent), [`is_refused`](crate::Error::is_refused)), the
//! journal's states, the command's exit codes and the callback receiver.
//!
//! Two things decide it: what was known about the request **before** this answer (its
//! [`History`]: could an earlier attempt have reached the service, in this call, in a future that
//! was dropped, or in an earlier process?) and the [`Answer`] itself.
//!
//! | history | answer | verdict |
//! |---|---|---|
//! | any | the envelope with `status` true | [`Verdict::Accepted`] |
//! | any | the envelope with code 500 | [`Verdict::Pending`] |
//! | any | a failure code documented as retryable with the same key (collect `fatal`) | [`Verdict::Unknown`] |
//! | fresh | any other failure code | [`Verdict::Refused`] |
//! | may have arrived | a code checked before the request is looked at (authentication, the account) or an undocumented one | [`Verdict::Unknown`]: it says nothing of the earlier attempt |
//! | may have arrived | any other failure code | [`Verdict::Refused`]: the service looked at this request (for the transfer service, one that had arrived would be answered `transfer.already.done`) |
//! | fresh | a code that confirms an earlier delivery (`transfer.already.done`) | [`Verdict::Refused`]: the key belongs to another request |
//! | may have arrived | a code that confirms an earlier delivery | [`Verdict::Unknown`] until the status read returns the request (then the client answers `Ok`) |
//! | fresh | an HTTP 4xx status without the envelope that the service documents as its own refusal of the request (the collect service's 403 for a non-public address) | [`Verdict::Refused`] |
//! | fresh | any other HTTP status without the envelope (a WAF's or a proxy's 403, a 404, a 429, a 502, an HTML page) | [`Verdict::Unknown`]: something in front of the service answered, and it may have passed the request on first |
//! | may have arrived | any HTTP status without the envelope | [`Verdict::Unknown`]: a proxy's page proves nothing |
//! | any | a reply that cannot be read | [`Verdict::Unknown`] |
//! | any | a transport failure after the request may have left | [`Verdict::Unknown`] |
//! | fresh | a transport failure before anything left (connect, TLS) | [`Verdict::NothingSent`] |
//! | may have arrived | a transport failure before anything left | [`Verdict::Unknown`] |
//! | fresh | refused locally, a setup or a journal failure before sending | [`Verdict::NothingSent`] |
//! | may have arrived | nothing sent by this call (the journal cannot tell whether it recorded the request, or another process took it over) | [`Verdict::Unknown`] |

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// What happened to the money, as far as anyone can know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verdict {
    /// The service accepted (or confirmed) the request: proceed.
    Accepted,
    /// The service refused it (a failure code, or an HTTP status it documents as its refusal):
    /// final, nothing done. A new attempt needs a new idempotency key.
    Refused,
    /// The service answered Pending (code 500): the outcome is unknown, **not failed**. Keep
    /// the key and follow up.
    Pending,
    /// The service may have acted: keep the key, resend the same prepared request (or ask the
    /// status), never create a new one.
    Unknown,
    /// Nothing reached the service: fix the input, the settings or the journal and try again.
    NothingSent,
}

impl Verdict {
    /// Every verdict.
    pub const ALL: [Verdict; 5] = [
        Verdict::Accepted,
        Verdict::Refused,
        Verdict::Pending,
        Verdict::Unknown,
        Verdict::NothingSent,
    ];

    /// The name the journal, the command and the logs use: `accepted`, `refused`, `pending`,
    /// `unknown`, `not-sent`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Accepted => "accepted",
            Verdict::Refused => "refused",
            Verdict::Pending => "pending",
            Verdict::Unknown => "unknown",
            Verdict::NothingSent => "not-sent",
        }
    }

    /// True for Pending and Unknown: the service may have acted and the key must be kept.
    pub fn is_open(self) -> bool {
        matches!(self, Verdict::Pending | Verdict::Unknown)
    }

    /// True when the service may hold the request (accepted, or not known not to).
    pub fn may_have_acted(self) -> bool {
        matches!(
            self,
            Verdict::Accepted | Verdict::Pending | Verdict::Unknown
        )
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What was known about a request before the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum History {
    /// Nothing of this request can have reached the service before this answer's attempt.
    Fresh,
    /// An earlier attempt may have reached it: a timeout, a dropped reply, a dropped future, a
    /// crash recorded in a journal, a Pending answer.
    MayHaveArrived,
}

/// The answer to one request, as far as the decision cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Answer {
    /// The envelope with `status` true.
    Success,
    /// The envelope with code 500.
    Pending,
    /// The envelope with a failure code.
    Refusal {
        /// The code, answered to a resend, says an earlier attempt was applied
        /// (`transfer.already.done`).
        confirms_earlier: bool,
        /// The code says nothing of an earlier attempt: checked before the request is looked
        /// at (authentication, the account), or not documented.
        says_nothing_earlier: bool,
        /// The code is final for this key (the documentation does not ask to retry with the same
        /// key, as it does for the collect service's `fatal`).
        is_final: bool,
    },
    /// An HTTP reply without the envelope (a proxy's page, a gateway's 502).
    NoEnvelope {
        /// Its status.
        status: u16,
        /// The service documents this status as its own refusal of the request (the collect
        /// service's 403 for a non-public address); otherwise something in front of the service
        /// answered.
        from_service: bool,
    },
    /// A reply that arrived but could not be read.
    Unreadable,
    /// The request did not complete at the transport level.
    Transport {
        /// True when this attempt may have reached the service (the bytes may have left).
        may_have_reached: bool,
    },
    /// Nothing was sent: refused locally, a setup failure, a journal that could not record.
    NotSent,
}

/// The decision: what `answer`, after `history`, says happened. See the [module](self) table.
///
/// ```
/// use whish_core::verdict::{decide, Answer, History, Verdict};
/// // A proxy's 403 proves nothing: it may have passed the request on before it answered.
/// let page = Answer::NoEnvelope { status: 403, from_service: false };
/// assert_eq!(decide(History::MayHaveArrived, page), Verdict::Unknown);
/// assert_eq!(decide(History::Fresh, page), Verdict::Unknown);
/// // The collect service's own 403 (a non-public address) on a first attempt is its refusal.
/// let own = Answer::NoEnvelope { status: 403, from_service: true };
/// assert_eq!(decide(History::Fresh, own), Verdict::Refused);
/// // transfer.already.done on a request never sent before: the key belongs to another transfer.
/// let done = Answer::Refusal { confirms_earlier: true, says_nothing_earlier: false, is_final: true };
/// assert_eq!(decide(History::Fresh, done), Verdict::Refused);
/// assert_eq!(decide(History::MayHaveArrived, done), Verdict::Unknown);
/// ```
pub fn decide(history: History, answer: Answer) -> Verdict {
    let earlier = history == History::MayHaveArrived;
    if let Some(lie) = told_before(earlier, answer) {
        return lie;
    }
    match answer {
        Answer::Success => Verdict::Accepted,
        Answer::Pending => Verdict::Pending,
        // A code documented as retryable with the same key: nothing is final yet.
        Answer::Refusal {
            is_final: false, ..
        } => Verdict::Unknown,
        Answer::Refusal {
            confirms_earlier,
            says_nothing_earlier,
            ..
        } if earlier && (confirms_earlier || says_nothing_earlier) => Verdict::Unknown,
        Answer::Refusal { .. } => Verdict::Refused,
        Answer::NoEnvelope { .. } if earlier => Verdict::Unknown,
        Answer::NoEnvelope {
            status,
            from_service: true,
        } if turned_away(status) => Verdict::Refused,
        Answer::NoEnvelope { .. } | Answer::Unreadable => Verdict::Unknown,
        Answer::Transport { may_have_reached } if may_have_reached || earlier => Verdict::Unknown,
        // Nothing sent by this call, after something that may have been: the request's fate is
        // the earlier attempt's (a journal that cannot tell whether it recorded, or a request
        // another process took over).
        Answer::NotSent if earlier => Verdict::Unknown,
        Answer::Transport { .. } | Answer::NotSent => Verdict::NothingSent,
    }
}

/// A verdict this project once gave and fixed, when its switch is on (see [`crate::lies`]).
fn told_before(earlier: bool, answer: Answer) -> Option<Verdict> {
    use crate::lies::{Lie, on};
    match answer {
        Answer::NoEnvelope { .. } if earlier && on(Lie::ProxyPageRefused) => Some(Verdict::Refused),
        Answer::Refusal {
            confirms_earlier: true,
            ..
        } if earlier && on(Lie::AlreadyDoneConfirms) => Some(Verdict::Accepted),
        _ => None,
    }
}

/// A 4xx other than 408 (timeout) and 429 (rate limit), which the service documents as its own
/// answer: it refused the request. The services otherwise answer 200 with the envelope, and a
/// page from something in front of them (a WAF that blocks the reply, a proxy whose upstream
/// timed out) may follow a request it passed on and the service applied.
fn turned_away(status: u16) -> bool {
    (400..500).contains(&status) && status != 408 && status != 429
}

/// The mark a prepared request carries across calls: set **before** the first byte of any
/// attempt leaves, so a future dropped mid-call (a `tokio::time::timeout` around it, a
/// cancelled task) still counts as "may have arrived" the next time the same prepared request
/// is sent. Cloning shares the mark.
///
/// It is a flag and a count of calls in flight. While a call is in flight the request may be
/// arriving, so every other call of the same request reads its answers after a possible
/// delivery. A call that ends keeps the flag set when it may have been applied (accepted,
/// Pending, unknown) and leaves it as it is otherwise; a call dropped before it ended sets it.
/// Nothing but [`clear`](Self::clear) (an authoritative read) ever clears it, so two tasks
/// sending the same prepared request at once cannot undo each other's mark.
#[derive(Debug, Clone, Default)]
pub struct DeliveryMark(Arc<MarkState>);

#[derive(Debug, Default)]
struct MarkState {
    arrived: AtomicBool,
    in_flight: AtomicU32,
}

/// Marks always compare equal: a mark is what happened to a request, not part of what the
/// request is, so two prepared requests with the same key and bytes are equal whatever was sent.
impl PartialEq for DeliveryMark {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl DeliveryMark {
    /// A mark for a request never sent.
    pub fn new() -> DeliveryMark {
        DeliveryMark::default()
    }

    /// A mark for a request that was (or may have been) sent before, such as one rebuilt from a
    /// journal.
    pub fn sent_before() -> DeliveryMark {
        let m = DeliveryMark::new();
        m.set();
        m
    }

    /// True when an attempt may have reached the service: an earlier call's, or one in flight.
    pub fn may_have_arrived(&self) -> bool {
        self.0.arrived.load(Ordering::SeqCst) || self.0.in_flight.load(Ordering::SeqCst) > 0
    }

    /// The history this mark stands for.
    pub fn history(&self) -> History {
        if self.may_have_arrived() {
            History::MayHaveArrived
        } else {
            History::Fresh
        }
    }

    /// Mark it: the request was, or may have been, sent before.
    pub fn set(&self) {
        self.0.arrived.store(true, Ordering::SeqCst);
    }

    /// Clear it: an authoritative read (a status) proved that no earlier attempt applied.
    pub fn clear(&self) {
        self.0.arrived.store(false, Ordering::SeqCst);
    }

    /// For a call in flight: may an attempt other than its own have arrived (an earlier call,
    /// or another call in flight now)?
    pub(crate) fn others_may_have_arrived(&self) -> bool {
        self.0.arrived.load(Ordering::SeqCst) || self.0.in_flight.load(Ordering::SeqCst) > 1
    }

    /// A call starts: it is in flight until its guard finishes or is dropped.
    pub(crate) fn enter(&self) -> InFlight<'_> {
        self.0.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight {
            mark: self,
            done: false,
        }
    }
}

/// One call of a marked request, in flight.
pub(crate) struct InFlight<'a> {
    mark: &'a DeliveryMark,
    done: bool,
}

impl InFlight<'_> {
    /// The call ended: keep what it proved.
    pub(crate) fn finish(mut self, may_have_acted: bool) {
        if may_have_acted {
            self.mark.set();
        }
        self.done = true;
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.done {
            // Dropped mid-call: its bytes may have left.
            self.mark.set();
        }
        self.mark.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page from something in front of the service.
    fn page(status: u16) -> Answer {
        Answer::NoEnvelope {
            status,
            from_service: false,
        }
    }

    /// A status the service documents as its own refusal.
    fn own(status: u16) -> Answer {
        Answer::NoEnvelope {
            status,
            from_service: true,
        }
    }

    /// Every row of the module's table.
    #[test]
    fn the_table() {
        use Answer::*;
        use History::*;
        use Verdict as V;
        let rows: &[(History, Answer, Verdict)] = &[
            (Fresh, Success, V::Accepted),
            (MayHaveArrived, Success, V::Accepted),
            (Fresh, Answer::Pending, V::Pending),
            (MayHaveArrived, Answer::Pending, V::Pending),
            (
                Fresh,
                Refusal {
                    confirms_earlier: false,
                    says_nothing_earlier: false,
                    is_final: true,
                },
                V::Refused,
            ),
            (
                MayHaveArrived,
                Refusal {
                    confirms_earlier: false,
                    says_nothing_earlier: false,
                    is_final: true,
                },
                V::Refused,
            ),
            (
                Fresh,
                Refusal {
                    confirms_earlier: true,
                    says_nothing_earlier: false,
                    is_final: true,
                },
                V::Refused,
            ),
            (
                MayHaveArrived,
                Refusal {
                    confirms_earlier: true,
                    says_nothing_earlier: false,
                    is_final: true,
                },
                V::Unknown,
            ),
            (
                Fresh,
                Refusal {
                    confirms_earlier: false,
                    says_nothing_earlier: true,
                    is_final: true,
                },
                V::Refused,
            ),
            (
                MayHaveArrived,
                Refusal {
                    confirms_earlier: false,
                    says_nothing_earlier: true,
                    is_final: true,
                },
                V::Unknown,
            ),
            (
                Fresh,
                Refusal {
                    confirms_earlier: false,
                    says_nothing_earlier: false,
                    is_final: false,
                },
                V::Unknown,
            ),
            (Fresh, page(403), V::Unknown),
            (Fresh, own(403), V::Refused),
            (MayHaveArrived, own(403), V::Unknown),
            (Fresh, page(404), V::Unknown),
            (Fresh, page(408), V::Unknown),
            (Fresh, own(429), V::Unknown),
            (Fresh, page(429), V::Unknown),
            (Fresh, page(502), V::Unknown),
            (Fresh, page(302), V::Unknown),
            (MayHaveArrived, page(403), V::Unknown),
            (MayHaveArrived, page(429), V::Unknown),
            (Fresh, Unreadable, V::Unknown),
            (MayHaveArrived, Unreadable, V::Unknown),
            (
                Fresh,
                Transport {
                    may_have_reached: true,
                },
                V::Unknown,
            ),
            (
                Fresh,
                Transport {
                    may_have_reached: false,
                },
                V::NothingSent,
            ),
            (
                MayHaveArrived,
                Transport {
                    may_have_reached: false,
                },
                V::Unknown,
            ),
            (Fresh, NotSent, V::NothingSent),
            (MayHaveArrived, NotSent, V::Unknown),
        ];
        for (h, a, v) in rows {
            assert_eq!(decide(*h, *a), *v, "{h:?} {a:?}");
        }
    }

    #[test]
    fn a_call_in_flight_is_seen_by_the_others_and_never_undone() {
        let m = DeliveryMark::new();
        let a = m.enter();
        assert!(m.may_have_arrived(), "a call in flight may be arriving");
        assert!(!m.others_may_have_arrived(), "only its own");
        let b = m.enter();
        assert!(m.others_may_have_arrived(), "another is in flight");
        b.finish(true); // accepted
        a.finish(false); // refused: does not undo the other's
        assert!(m.may_have_arrived());
        let dropped = m.enter();
        drop(dropped);
        assert!(m.may_have_arrived());
        m.clear();
        assert!(!m.may_have_arrived());
        let c = m.enter();
        drop(c);
        assert!(m.may_have_arrived(), "a dropped call sets it");
    }

    #[test]
    fn marks_are_shared_by_clones() {
        let m = DeliveryMark::new();
        let c = m.clone();
        assert_eq!(m.history(), History::Fresh);
        c.set();
        assert!(m.may_have_arrived());
        assert!(DeliveryMark::sent_before().may_have_arrived());
    }
}
