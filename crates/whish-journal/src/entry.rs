//! What one journal entry holds: the request, its key, its state and its outcome.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

macro_rules! names {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident => $s:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vm])* $v,)*
        }

        impl $name {
            /// Every value.
            pub const ALL: &'static [$name] = &[$($name::$v),*];

            /// The name stored in the journal and printed by the command.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$v => $s,)*
                }
            }

            /// The value with this stored name.
            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($s => Some($name::$v),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

/// The outcome `result` of an entry a person abandoned.
pub const ABANDONED: &str = "abandoned";

/// The outcome `result` of an entry whose row could not be read (sent to the operator).
pub(crate) const UNREADABLE: &str = "unreadable";

names! {
    /// The service a request went to.
    Service {
        /// Money transfer (send, cancel).
        MoneyTransfer => "money-transfer",
        /// Hosted collect (create, refund).
        HostedCollect => "hosted-collect",
        /// International top-up (pay).
        IntlTopup => "intl-topup",
    }
}

names! {
    /// The money-moving operation.
    Operation {
        /// Money transfer: create a transfer (key: the Request-id).
        Send => "send",
        /// Money transfer: cancel a cash-collection transfer (key: the cancel's Request-id).
        Cancel => "cancel",
        /// Hosted collect: create a payment (key: the externalId).
        Create => "create",
        /// Hosted collect: refund a payment (key: the payment's externalId).
        Refund => "refund",
        /// Top-up: pay for an option (key: the externalId).
        Pay => "pay",
        /// The inbox: a change a service reported to the receiver (key: the change's own key).
        Callback => "callback",
    }
}

names! {
    /// Where an entry stands. The moves follow the outcome model of the specs:
    ///
    /// | state | meaning | what [`recover`](crate::Journal::recover) does |
    /// |---|---|---|
    /// | `intended` | recorded, its first send was starting | treats it as `may-have-arrived` |
    /// | `may-have-arrived` | an unknown outcome: a timeout, a dropped reply, a crash | resends the same bytes with the same key |
    /// | `pending` | the service answered Pending (code 500) | follows up with status (transfer) or the same request replayed |
    /// | `accepted` | the service accepted it (or confirmed it) | nothing: final |
    /// | `refused` | the service refused it, or nothing was sent | nothing: final; a new attempt needs a new key |
    /// | `needs-operator` | still open after the recovery deadline | nothing: a person looks at it |
    /// | `waiting` | the inbox: a reported change recorded, not yet handed on | nothing: the receiver's workers hand it on |
    /// | `handed-on` | the inbox: the handler took it | nothing: final |
    /// | `escalated` | the inbox: not handed on by its deadline | nothing: a person looks at it |
    State {
        /// Recorded; the first send was starting.
        Intended => "intended",
        /// The request may have reached the service; its outcome is unknown.
        MayHaveArrived => "may-have-arrived",
        /// The service answered Pending: outcome unknown, not failed.
        Pending => "pending",
        /// Accepted by the service: final.
        Accepted => "accepted",
        /// Refused by the service, or not sent at all: final, nothing done.
        Refused => "refused",
        /// Still open after the recovery deadline: an operator decides.
        NeedsOperator => "needs-operator",
        /// The inbox: a change a service reported, recorded before its 200 and not yet handed
        /// on to your handler.
        Waiting => "waiting",
        /// The inbox: your handler took the change: final.
        HandedOn => "handed-on",
        /// The inbox: still not handed on after its deadline: a person decides. (A state of
        /// its own, so that an inbox worker never takes a request waiting for the operator,
        /// nor recovery a change.)
        Escalated => "escalated",
    }
}

impl State {
    /// True for the states [`recover`](crate::Journal::recover) works on.
    pub fn is_open(self) -> bool {
        matches!(
            self,
            State::Intended | State::MayHaveArrived | State::Pending
        )
    }

    /// True for `accepted` and `refused` (the service's answer is known) and `handed-on`.
    pub fn is_final(self) -> bool {
        matches!(self, State::Accepted | State::Refused | State::HandedOn)
    }

    /// The state a request's [`Verdict`](whish_core::verdict::Verdict) leaves its entry in: the one
    /// mapping, so the journal and the command's exit code cannot disagree.
    ///
    /// | verdict | state |
    /// |---|---|
    /// | accepted | `accepted` |
    /// | refused | `refused` |
    /// | pending | `pending` |
    /// | unknown | `may-have-arrived` |
    /// | not-sent | `refused` (a first send; a resend's entry stays as it was) |
    pub fn of_verdict(verdict: whish_core::verdict::Verdict) -> State {
        match verdict {
            whish_core::verdict::Verdict::Accepted => State::Accepted,
            whish_core::verdict::Verdict::Pending => State::Pending,
            whish_core::verdict::Verdict::Unknown => State::MayHaveArrived,
            _ => State::Refused,
        }
    }
}

/// The references needed to confirm an entry with the service. Never a credential, never a PIN.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct References {
    /// Money transfer: the LTN number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ltn_number: Option<String>,
    /// Money transfer: the transfer id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer_id: Option<String>,
    /// Money transfer: the status last read or returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer_status: Option<String>,
    /// Money transfer: the fees the service applied (`charges` of the create answer), in the
    /// sending currency. None when the answer did not carry them (a confirmation read through
    /// status, or an entry recorded before 0.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charges: Option<whish_core::Amount>,
    /// Hosted collect: the hosted page the payer is sent to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collect_url: Option<String>,
    /// Top-up: the transaction id of every sold item (the PIN is never kept: pay again with
    /// the same externalId to retrieve the sale).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sold_item_ids: Vec<String>,
}

/// What the service answered last, in a few words.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedOutcome {
    /// `accepted`, `confirmed`, `refused`, `not-sent`, `pending`, `unknown`, `challenge`,
    /// `abandoned` (closed by a person: [`Journal::abandon`](crate::Journal::abandon)).
    pub result: String,
    /// The failure code, when the service answered one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The one-line error, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The reply was a replay of an earlier one (`retrieved` true).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retrieved: bool,
}

impl RecordedOutcome {
    pub(crate) fn new(result: &str) -> RecordedOutcome {
        RecordedOutcome {
            result: result.to_owned(),
            ..RecordedOutcome::default()
        }
    }
}

/// One recorded request.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Entry {
    /// The journal's own row id.
    pub id: i64,
    /// The service.
    pub service: Service,
    /// The operation.
    pub operation: Operation,
    /// The idempotency key: the Request-id (transfer) or the externalId (collect, top-up).
    pub key: String,
    /// What the request needs besides its body (the top-up provider).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The exact request body, byte for byte (no credentials: those travel in headers). It
    /// holds personal data (names, phones, dates of birth): see
    /// [`prune`](crate::Journal::prune).
    #[serde(skip)]
    pub request: Vec<u8>,
    /// The state.
    pub state: State,
    /// How many times the request was recorded to go out (each may hold resends). An entry
    /// recorded as never sent (reserved and given back, or its first write's answer lost)
    /// counts one, so a send of it after that makes two.
    pub attempts: u32,
    /// When it was recorded to be sent. A request recorded as never sent (`refused`,
    /// `not-sent`) and sent later is recorded again then: its `created` is that later time.
    #[serde(with = "time::serde::rfc3339")]
    pub created: OffsetDateTime,
    /// When it last changed.
    #[serde(with = "time::serde::rfc3339")]
    pub updated: OffsetDateTime,
    /// The last answer, summarized.
    pub outcome: Option<RecordedOutcome>,
    /// What confirms it with the service.
    pub references: References,
    /// The service and account it was recorded for: the base URL and a fingerprint of the
    /// account's plain settings (`TransferClient::target` and the like), never a secret. `None`
    /// on entries written before 0.4. Recovery, abandon and a resend leave an entry whose
    /// target differs from their client's untouched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl Entry {
    /// Whether this entry may be for `target` (a client's `target()`, its service and account):
    /// recorded for it, or recorded before 0.4, when entries named none (such an entry may be
    /// for any service and account).
    pub fn may_be_for(&self, target: &str) -> bool {
        self.target.as_deref().is_none_or(|t| t == target)
    }

    /// Whether this is a money-transfer send to `target` ([`may_be_for`](Self::may_be_for))
    /// whose transfer exists or may yet: accepted, or not final (open, pending, waiting for an
    /// operator). A refused send made none. The same exact body held so under another
    /// Request-id is a payment made, or being made, already: sending it again pays twice.
    pub fn may_have_paid(&self, target: &str) -> bool {
        self.service == Service::MoneyTransfer
            && self.operation == Operation::Send
            && may_have_paid(self.state)
            && self.may_be_for(target)
    }

    /// Whether this request was recorded as never sent (`refused`, outcome `not-sent`: reserved
    /// and given back, or its first write's answer lost): a send of it is a first send, which a
    /// check for a payment made before must look at as it looks at a request new to the
    /// journal.
    pub fn never_left(&self) -> bool {
        self.state == State::Refused
            && self
                .outcome
                .as_ref()
                .is_some_and(|o| o.result == "not-sent")
    }
}

/// Whether a send in `state` has a transfer, or may yet: accepted, or not final.
pub(crate) fn may_have_paid(state: State) -> bool {
    state == State::Accepted || !state.is_final()
}

/// How many of the most recent entries a check for a payment made before reads (a resend under
/// a new Request-id, a batch's new rows): enough for a day's sends of a busy account, and a
/// bounded read whatever the journal's size.
pub const REPEAT_LOOKBACK: u32 = 50_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in State::ALL {
            assert_eq!(State::parse(s.as_str()), Some(*s));
        }
        for s in Service::ALL {
            assert_eq!(Service::parse(s.as_str()), Some(*s));
        }
        for o in Operation::ALL {
            assert_eq!(Operation::parse(o.as_str()), Some(*o));
        }
        assert_eq!(State::parse("done"), None);
        let open: Vec<_> = State::ALL.iter().filter(|s| s.is_open()).collect();
        assert_eq!(
            open,
            [&State::Intended, &State::MayHaveArrived, &State::Pending]
        );
        assert!(!State::NeedsOperator.is_open() && !State::NeedsOperator.is_final());
    }

    fn send(state: State, target: Option<&str>) -> Entry {
        Entry {
            id: 1,
            service: Service::MoneyTransfer,
            operation: Operation::Send,
            key: "7".into(),
            context: None,
            request: b"{}".to_vec(),
            state,
            attempts: 1,
            created: OffsetDateTime::UNIX_EPOCH,
            updated: OffsetDateTime::UNIX_EPOCH,
            outcome: None,
            references: References::default(),
            target: target.map(str::to_owned),
        }
    }

    #[test]
    fn a_send_may_have_paid_unless_refused_and_only_at_its_own_target() {
        let here = "https://whish.example/api account=1";
        let paid: Vec<State> = State::ALL
            .iter()
            .copied()
            .filter(|s| send(*s, Some(here)).may_have_paid(here))
            .collect();
        assert_eq!(
            paid,
            [
                State::Intended,
                State::MayHaveArrived,
                State::Pending,
                State::Accepted,
                State::NeedsOperator,
                State::Waiting,
                State::Escalated,
            ]
        );
        // Recorded for another service or account: not a payment made here.
        assert!(!send(State::Accepted, Some("http://127.0.0.1:1 account=1")).may_have_paid(here));
        // Recorded before entries named their target: it may be this one.
        assert!(send(State::Accepted, None).may_have_paid(here));
        assert!(send(State::Accepted, None).may_be_for(here));
        // Only a money-transfer send pays a transfer.
        let mut cancel = send(State::Accepted, Some(here));
        cancel.operation = Operation::Cancel;
        assert!(!cancel.may_have_paid(here));
    }
}
