//! The operation plan: drawn up front from the seed, so one seed is one sequence of intents and
//! faults (the interleaving of the concurrent workers still varies from run to run).

use std::time::Duration;

use whish_sandbox::{Endpoint, Fault};

/// One intended operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A money-transfer send (cash collection, or a mobile wallet).
    Send {
        /// Cash collection (else mobile wallet).
        cash: bool,
        /// Whole dollars, 10 to 500.
        dollars: u32,
        /// A wallet that fails (else one that is credited).
        failing_wallet: bool,
    },
    /// Cancel a cash transfer the soak believes is SENT.
    Cancel,
    /// The receiver collects a cash transfer (sandbox control, not a client call).
    CollectCash,
    /// Read the status of a transfer the soak sent.
    Status,
    /// Create a hosted payment.
    CollectCreate {
        /// Cents, 100 to 50 000.
        cents: u32,
    },
    /// The payer pays a created link (sandbox control, not a client call).
    PayLink,
    /// Refund a paid hosted payment.
    Refund,
    /// Fetch top-up options and pay one.
    TopupPay {
        /// Which provider and option.
        option: usize,
    },
}

/// The top-up options the plan draws from: provider, target, option id.
pub const TOPUP_OPTIONS: &[(&str, &str, &str)] = &[
    ("etisalat-ae", "+971501234567", "ETI-10"),
    ("etisalat-ae", "+971501234567", "ETI-12"),
    ("du-ae", "971501234567", "DU-1GB"),
    ("gift-voucher", "buyer@example.com", "GV-20"),
];

impl Kind {
    /// The endpoint whose call a fault is injected on; `None` for sandbox-control operations.
    pub fn endpoint(&self) -> Option<Endpoint> {
        Some(match self {
            Kind::Send { .. } => Endpoint::TransferSend,
            Kind::Cancel => Endpoint::TransferCancel,
            Kind::Status => Endpoint::TransferStatus,
            Kind::CollectCreate { .. } => Endpoint::CollectCreate,
            Kind::Refund => Endpoint::CollectRefund,
            Kind::TopupPay { .. } => Endpoint::TopupPay,
            Kind::CollectCash | Kind::PayLink => return None,
        })
    }
}

/// What goes wrong around one operation's call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trouble {
    /// One sandbox fault on the call.
    Fault(Fault),
    /// The first attempt times out (the reply is held past the attempt timeout, the request
    /// applied), and the next attempt meets a proxy's page with this status, no envelope.
    PageAfterTimeout(u16),
    /// The reply is lost (applied), and the status read that would confirm the resend answers
    /// a code instead (`sending.transfer.invalid.info`, `transfer.not_exists`).
    UnreadConfirmation,
    /// The caller drops the call's future (a `tokio::time::timeout` around it) while the reply
    /// is held, then sends the same prepared request again.
    DroppedFuture,
}

/// One step of the plan.
#[derive(Debug, Clone, Copy)]
pub struct Op {
    /// What to do.
    pub kind: Kind,
    /// What goes wrong around the operation's call, if anything.
    pub fault: Option<Trouble>,
    /// A number the operation uses to pick its target.
    pub pick: u64,
}

/// How long a delay fault holds a reply: longer than the client's attempt timeout.
pub const DELAY: Duration = Duration::from_millis(1500);

/// Draw `n` operations from `seed`. About a fifth of the client calls carry a fault, the four
/// kinds equally often.
pub fn plan(n: usize, seed: u64) -> Vec<Op> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n)
        .map(|_| {
            let kind = match rng.u32(0..100) {
                0..30 => Kind::Send {
                    cash: rng.u32(0..3) > 0,
                    dollars: rng.u32(10..=500),
                    failing_wallet: rng.u32(0..5) == 0,
                },
                30..38 => Kind::Cancel,
                38..45 => Kind::CollectCash,
                45..55 => Kind::Status,
                55..70 => Kind::CollectCreate {
                    cents: rng.u32(100..=50_000),
                },
                70..78 => Kind::PayLink,
                78..85 => Kind::Refund,
                _ => Kind::TopupPay {
                    option: rng.usize(0..TOPUP_OPTIONS.len()),
                },
            };
            let fault =
                (kind.endpoint().is_some() && rng.u32(0..5) == 0).then(|| match rng.u32(0..10) {
                    0 => Trouble::Fault(Fault::DropRequest),
                    1 => Trouble::Fault(Fault::DropReply),
                    2 => Trouble::Fault(Fault::Delay(DELAY)),
                    3 => Trouble::Fault(Fault::Pending),
                    4 => Trouble::PageAfterTimeout(403),
                    5 => Trouble::PageAfterTimeout(429),
                    6 => Trouble::PageAfterTimeout(502),
                    7 => Trouble::UnreadConfirmation,
                    // A WAF that passed the request on and blocked the reply. The collect
                    // create's 403 is the service's own refusal (a non-public address), which a
                    // page cannot be told from: a 502 there.
                    8 if matches!(kind, Kind::CollectCreate { .. }) => {
                        Trouble::Fault(Fault::AppliedPage(502))
                    }
                    8 => Trouble::Fault(Fault::AppliedPage(403)),
                    _ => Trouble::DroppedFuture,
                });
            Op {
                kind,
                fault,
                pick: rng.u64(..),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_is_one_plan_with_faults_on_about_a_fifth_of_the_calls() {
        let a = plan(5000, 7);
        let b = plan(5000, 7);
        assert!(
            a.iter()
                .zip(&b)
                .all(|(x, y)| x.kind == y.kind && x.fault == y.fault)
        );
        let calls = a.iter().filter(|o| o.kind.endpoint().is_some()).count();
        let faults = a.iter().filter(|o| o.fault.is_some()).count();
        let share = faults as f64 / calls as f64;
        assert!((0.17..0.23).contains(&share), "{share}");
        for f in [
            Trouble::Fault(Fault::DropRequest),
            Trouble::Fault(Fault::DropReply),
            Trouble::Fault(Fault::Delay(DELAY)),
            Trouble::Fault(Fault::Pending),
            Trouble::PageAfterTimeout(403),
            Trouble::PageAfterTimeout(429),
            Trouble::PageAfterTimeout(502),
            Trouble::UnreadConfirmation,
            Trouble::DroppedFuture,
            Trouble::Fault(Fault::AppliedPage(403)),
            Trouble::Fault(Fault::AppliedPage(502)),
        ] {
            assert!(a.iter().any(|o| o.fault == Some(f)), "{f:?} never drawn");
        }
        assert!(
            a.iter()
                .all(|o| o.kind.endpoint().is_some() || o.fault.is_none())
        );
    }
}
