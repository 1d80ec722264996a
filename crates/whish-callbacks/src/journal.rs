//! The journal's inbox as the receiver's: a change is an entry of the journal's lifecycle
//! (`record`, `take a waiting change`, `defer`, `finish`, `to the operator`), under its lease,
//! fencing token and heartbeat, and handed on once across restarts and processes.

use std::time::Duration;

use whish_journal::{Journal, Recorded, Service, State, Taken};

use crate::inbox::{BoxFuture, ChangeKind, ChangeState, Held, Inbox, StoreError};

/// The service a change's key belongs to: transfer changes are the transfer service's, the
/// rest the hosted-collect service's.
pub(crate) fn service_of(key: &str) -> Service {
    service_of_kind(ChangeKind::of(key))
}

fn service_of_kind(kind: ChangeKind) -> Service {
    match kind {
        ChangeKind::Transfer => Service::MoneyTransfer,
        ChangeKind::Collect => Service::HostedCollect,
    }
}

fn held_of(taken: Taken) -> Held {
    Held::new(
        taken.change.key.clone(),
        taken.change.body.clone(),
        taken.change.attempts,
        taken.change.last_error.clone(),
        taken,
    )
}

fn taken(held: &Held) -> Result<&Taken, StoreError> {
    held.lease::<Taken>()
        .ok_or_else(|| "a change held by another inbox".into())
}

fn state_of(state: State) -> ChangeState {
    match state {
        State::HandedOn => ChangeState::HandedOn,
        State::Escalated => ChangeState::Escalated,
        _ => ChangeState::Waiting,
    }
}

impl Inbox for Journal {
    fn record<'a>(
        &'a self,
        key: &'a str,
        body: &'a [u8],
    ) -> BoxFuture<'a, Result<Option<Held>, StoreError>> {
        Box::pin(async move {
            Ok(
                match self.record_change(service_of(key), key, body).await? {
                    Recorded::New(taken) => Some(held_of(taken)),
                    _ => None,
                },
            )
        })
    }

    fn take(&self, kind: ChangeKind, limit: u32) -> BoxFuture<'_, Result<Vec<Held>, StoreError>> {
        Box::pin(async move {
            Ok(self
                .take_changes_of(Some(service_of_kind(kind)), limit, false)
                .await?
                .into_iter()
                .map(held_of)
                .collect())
        })
    }

    fn renew<'a>(&'a self, held: &'a Held) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { Ok(self.renew_change(taken(held)?).await?) })
    }

    fn handed_on<'a>(&'a self, held: &'a Held) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { Ok(Journal::handed_on(self, taken(held)?).await?) })
    }

    fn failed<'a>(
        &'a self,
        held: &'a Held,
        error: &'a str,
        backoff: Duration,
        deadline: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            Ok(self
                .hand_on_failed(taken(held)?, error, backoff, deadline)
                .await?)
        })
    }

    fn state<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<ChangeState>, StoreError>> {
        Box::pin(async move {
            Ok(self
                .change(service_of(key), key)
                .await?
                .map(|c| state_of(c.state)))
        })
    }

    fn lease(&self) -> Duration {
        self.lease_length()
    }
}
