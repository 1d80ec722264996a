//! Switches that bring back, one at a time, a lie about money this project once told and fixed.
//!
//! They exist so that the journal's model checker can prove it still sees each of them: turned
//! on, the checker must find a run in which the SDK says something false, and print it. The
//! switches are compiled only with the feature `lies`, which no shipped build enables (the
//! facade `whish` does not offer it); without it [`on`] is a constant `false` and the code it
//! guards is dead.
//!
//! `cargo xtask model --list-lies` names them; `cargo xtask model --lie NAME` runs the checker
//! with one on and fails unless the checker reports a violation.

/// A lie the SDK once told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Lie {
    /// A page from something in front of the service (a proxy's 502) after an attempt that may
    /// have arrived read as the service's refusal.
    ProxyPageRefused,
    /// `transfer.already.done` answered to a resend read as confirmation of this request, though
    /// the service answers it for any Request-id it has seen, refused ones included.
    AlreadyDoneConfirms,
    /// An insert whose answer was lost (the commit may have happened) reported "nothing was
    /// sent" without closing the entry, which a recovery then sends.
    LostCommitNotSent,
    /// A sender whose lease was taken over while its call was in flight reporting its own
    /// refusal, though the process that took over may have sent the request first.
    LeaseLostFailed,
    /// Recovery sending an entry whose deadline has passed, after which a person decides.
    RecoverPastDeadline,
    /// Every insert drawing fencing token 1, so that the orphan of a failed insert is matched
    /// by any entry of the same key and holder (another task's send in flight).
    TokenOneOrphan,
    /// A holder in another PID namespace taken for dead because its pid is not in this
    /// namespace's `/proc`.
    OtherNamespaceDead,
    /// The callback receiver answering 200 to a change it could not record (its answer decided
    /// by a check, not by the write), so the service stops delivering a change nobody has.
    OkBeforeRecord,
    /// A change whose handler failed given up on (marked handed on), as the poller did when a
    /// status was final whatever happened to its delivery.
    GiveUpOnFailure,
    /// A send of a request recorded as never sent whose reopening write failed (it may have
    /// committed, and a recovery then sends it) reporting "nothing was sent".
    ReopenErrorNotSent,
    /// An inbox worker that held a change while it waited (for a slot, or frozen) running the
    /// handler without checking that its lease is still its own: another worker may have taken
    /// the change meanwhile, and the two run it.
    StaleHolderRuns,
}

impl Lie {
    /// Every lie, in the order `--list-lies` prints them.
    pub const ALL: [Lie; 11] = [
        Lie::ProxyPageRefused,
        Lie::AlreadyDoneConfirms,
        Lie::LostCommitNotSent,
        Lie::LeaseLostFailed,
        Lie::RecoverPastDeadline,
        Lie::TokenOneOrphan,
        Lie::OtherNamespaceDead,
        Lie::OkBeforeRecord,
        Lie::GiveUpOnFailure,
        Lie::ReopenErrorNotSent,
        Lie::StaleHolderRuns,
    ];

    /// The name `--lie` takes.
    pub fn name(self) -> &'static str {
        match self {
            Lie::ProxyPageRefused => "proxy-page-refused",
            Lie::AlreadyDoneConfirms => "already-done-confirms",
            Lie::LostCommitNotSent => "lost-commit-not-sent",
            Lie::LeaseLostFailed => "lease-lost-failed",
            Lie::RecoverPastDeadline => "recover-past-deadline",
            Lie::TokenOneOrphan => "token-one-orphan",
            Lie::OtherNamespaceDead => "other-namespace-dead",
            Lie::OkBeforeRecord => "ok-before-record",
            Lie::GiveUpOnFailure => "give-up-on-failure",
            Lie::ReopenErrorNotSent => "reopen-error-not-sent",
            Lie::StaleHolderRuns => "stale-holder-runs",
        }
    }

    /// The lie with this name.
    pub fn parse(name: &str) -> Option<Lie> {
        Lie::ALL.into_iter().find(|l| l.name() == name)
    }
}

#[cfg(feature = "lies")]
static ON: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

#[cfg(feature = "lies")]
fn code(lie: Option<Lie>) -> u8 {
    lie.map_or(0, |l| {
        Lie::ALL
            .iter()
            .position(|x| *x == l)
            .map_or(0, |i| i as u8 + 1)
    })
}

/// Turn one lie on for this whole process (`None`: none). Only with the feature `lies`.
#[cfg(feature = "lies")]
#[cfg_attr(docsrs, doc(cfg(feature = "lies")))]
pub fn set(lie: Option<Lie>) {
    ON.store(code(lie), std::sync::atomic::Ordering::SeqCst);
}

/// Whether `lie` is on: always false without the feature `lies`.
#[inline]
pub fn on(lie: Lie) -> bool {
    #[cfg(feature = "lies")]
    {
        ON.load(std::sync::atomic::Ordering::Relaxed) == code(Some(lie))
    }
    #[cfg(not(feature = "lies"))]
    {
        let _ = lie;
        false
    }
}
