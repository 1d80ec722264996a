//! The hosted-collect world: merchant balances, payment links and the recorded replies.

use std::collections::HashMap;

use rust_decimal::Decimal;
use time::OffsetDateTime;

use crate::config::Settings;
use crate::envelope::Reply;

/// The collectStatus of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinkState {
    Pending,
    Success,
    Failed,
    Refunded,
}

impl LinkState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            LinkState::Pending => "pending",
            LinkState::Success => "success",
            LinkState::Failed => "failed",
            LinkState::Refunded => "refunded",
        }
    }
}

/// One payment link.
#[derive(Debug, Clone)]
pub(crate) struct Payment {
    pub external_id: String,
    pub token: String,
    pub currency: &'static str,
    pub amount: Decimal,
    pub invoice: Option<String>,
    pub success_callback_url: String,
    pub failure_callback_url: String,
    pub success_redirect_url: String,
    pub failure_redirect_url: String,
    pub state: LinkState,
    pub payer_phone: Option<String>,
    pub expires_at: OffsetDateTime,
    pub failed_attempts: u32,
}

/// The collect service's state.
#[derive(Debug)]
pub(crate) struct CollectWorld {
    pub balances: HashMap<&'static str, Decimal>,
    pub payments: Vec<Payment>,
    /// The recorded reply of each externalId given to create, replayed verbatim.
    pub create_replies: HashMap<String, Reply>,
    /// The recorded reply of each accepted refund.
    pub refund_replies: HashMap<String, Reply>,
    pub next: u64,
}

impl CollectWorld {
    pub(crate) fn new(s: &Settings) -> CollectWorld {
        let mut balances = HashMap::new();
        for (c, a) in &s.collect_balances {
            if let Some(c) = crate::transfer::state::static_currency(c) {
                balances.insert(c, *a);
            }
        }
        CollectWorld {
            balances,
            payments: Vec::new(),
            create_replies: HashMap::new(),
            refund_replies: HashMap::new(),
            next: 1,
        }
    }

    /// Settle every pending link whose time is up as failed.
    pub(crate) fn expire(&mut self, now: OffsetDateTime) {
        for p in &mut self.payments {
            if p.state == LinkState::Pending && p.expires_at <= now {
                p.state = LinkState::Failed;
            }
        }
    }

    pub(crate) fn by_external_id(&self, id: &str) -> Option<usize> {
        self.payments.iter().position(|p| p.external_id == id)
    }

    pub(crate) fn by_token(&self, token: &str) -> Option<usize> {
        self.payments.iter().position(|p| p.token == token)
    }
}
