//! Recovery: drive every open entry to a final state with the same key, or hand it to an
//! operator once its deadline has passed.

use std::time::Duration;

#[cfg(feature = "money-transfer")]
use whish_core::RequestId;
#[cfg(feature = "hosted-collect")]
use whish_hosted_collect::{CollectClient, PreparedPayment, PreparedRefund};
#[cfg(feature = "intl-topup")]
use whish_intl_topup::{PreparedPay, TopupClient};
#[cfg(feature = "money-transfer")]
use whish_money_transfer::{
    Held, PreparedCancel, PreparedTransfer, StatusQuery, TransferClient, TransferStatus,
};

use crate::entry::{Entry, Operation, RecordedOutcome, Service, State};
use crate::journaled::Recording;
#[cfg(feature = "intl-topup")]
use crate::journaled::pay_verdict;
#[cfg(feature = "money-transfer")]
use crate::journaled::{cancel_verdict, send_verdict, status_refs};
#[cfg(feature = "hosted-collect")]
use crate::journaled::{create_verdict, refund_verdict};
use crate::store::millis;
use crate::{Journal, JournalError};

/// The clients recovery sends with. An entry of a service without a client is left as it is
/// (and counted in [`RecoveryReport::skipped`]).
#[derive(Debug, Clone, Default)]
pub struct Clients {
    #[cfg(feature = "money-transfer")]
    transfer: Option<TransferClient>,
    #[cfg(feature = "hosted-collect")]
    collect: Option<CollectClient>,
    #[cfg(feature = "intl-topup")]
    topup: Option<TopupClient>,
    adopt_untargeted: bool,
}

impl Clients {
    /// No clients yet.
    pub fn new() -> Clients {
        Clients::default()
    }
    /// Recover money-transfer sends and cancels with this client.
    #[cfg(feature = "money-transfer")]
    pub fn transfer(mut self, client: TransferClient) -> Self {
        self.transfer = Some(client);
        self
    }
    /// The transfer client, when one was given.
    #[cfg(feature = "money-transfer")]
    pub(crate) fn transfer_client(&self) -> Option<&TransferClient> {
        self.transfer.as_ref()
    }
    /// Recover hosted-collect creates and refunds with this client.
    #[cfg(feature = "hosted-collect")]
    pub fn collect(mut self, client: CollectClient) -> Self {
        self.collect = Some(client);
        self
    }
    /// Recover top-up payments with this client.
    #[cfg(feature = "intl-topup")]
    pub fn topup(mut self, client: TopupClient) -> Self {
        self.topup = Some(client);
        self
    }

    /// Take the entries that record no target (written before 0.4) as these clients' services:
    /// a person's word that the journal held this environment's entries only. Without it they
    /// are left alone, as another service's ([`RecoveryReport::other_service`]): nothing tells
    /// a sandbox's old entry from production's.
    pub fn adopt_untargeted(mut self, yes: bool) -> Self {
        self.adopt_untargeted = yes;
        self
    }

    /// The target (service and account) of the client given for `service`, if one was.
    pub(crate) fn target_for(&self, service: Service) -> Option<String> {
        match service {
            #[cfg(feature = "money-transfer")]
            Service::MoneyTransfer => self.transfer.as_ref().map(TransferClient::target),
            #[cfg(feature = "hosted-collect")]
            Service::HostedCollect => self.collect.as_ref().map(CollectClient::target),
            #[cfg(feature = "intl-topup")]
            Service::IntlTopup => self.topup.as_ref().map(TopupClient::target),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The entry's recorded target when it is not the target of the client given for its
    /// service (or it records none, unless [`adopt_untargeted`](Self::adopt_untargeted)): such
    /// an entry is never sent, checked or closed through that client.
    pub(crate) fn other_service(&self, entry: &Entry) -> Option<OtherService> {
        let current = self.target_for(entry.service)?;
        let recorded = match entry.target.as_deref() {
            Some(recorded) if recorded == current => return None,
            None if self.adopt_untargeted => return None,
            Some(recorded) => recorded.to_owned(),
            None => UNTARGETED.to_owned(),
        };
        Some(OtherService {
            service: entry.service,
            operation: entry.operation,
            key: entry.key.clone(),
            state: entry.state,
            recorded,
            current,
        })
    }
}

/// An entry recorded for another service or account than the client given for it (another base
/// URL, another account): left untouched, and open.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct OtherService {
    /// The service.
    pub service: Service,
    /// The operation.
    pub operation: Operation,
    /// The idempotency key.
    pub key: String,
    /// Its state.
    pub state: State,
    /// The target it was recorded for: base URL and account fingerprint ([`UNTARGETED`] for an
    /// entry written before 0.4).
    pub recorded: String,
    /// The target of the client given: base URL and account fingerprint.
    pub current: String,
}

/// What [`OtherService::recorded`] says of an entry that records no target.
pub const UNTARGETED: &str = "unknown (recorded before 0.4, which kept no service)";

pub(crate) use crate::entry::UNREADABLE;

/// How recovery runs.
#[derive(Debug, Clone)]
#[must_use]
pub struct Recovery {
    deadline: Duration,
    batch: i64,
    take_over: bool,
    retry_needs_operator: bool,
}

impl Default for Recovery {
    fn default() -> Self {
        Recovery {
            deadline: Duration::from_secs(24 * 3600),
            batch: 64,
            take_over: false,
            retry_needs_operator: false,
        }
    }
}

impl Recovery {
    /// The defaults: an entry still open 24 hours after it was recorded goes to
    /// `needs-operator`; 64 entries leased at a time.
    pub fn new() -> Recovery {
        Recovery::default()
    }
    /// How long after it was recorded an entry may stay open before an operator must decide.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }
    /// Also take the entries whose lease has not expired yet. Only when the process that held
    /// them is known to be gone (the one process of a SQLite journal was killed, and you are
    /// restarting it): a live holder would then send the same request at the same time (safe,
    /// with the same key, but no longer one worker per entry).
    pub fn take_over(mut self, yes: bool) -> Self {
        self.take_over = yes;
        self
    }
    /// Also work the entries waiting for an operator (`needs-operator`) that are within the
    /// [`deadline`](Self::deadline): a person's decision that they should be settled now, after
    /// the default deadline of 24 hours sent them there (a batch resumed after a weekend). Each
    /// is settled the safe way for its service, with its own key and bytes: a transfer's send
    /// is read by status first and sent again only when the service never received it; a
    /// cancel is decided by the transfer's status; a hosted-collect or top-up request is sent
    /// again with its own externalId, which the service replays if it had it and acts on now if
    /// it never did (a top-up bought days late: only ask for what should still happen). One
    /// past the deadline stays as it is, and one whose row cannot be read stays waiting for the
    /// operator.
    pub fn retry_needs_operator(mut self, yes: bool) -> Self {
        self.retry_needs_operator = yes;
        self
    }
    /// How many entries one lease takes at a time (at least 1).
    pub fn batch(mut self, batch: u32) -> Self {
        self.batch = i64::from(batch.max(1));
        self
    }
}

/// One entry that recovery moved.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct Change {
    /// The service.
    pub service: Service,
    /// The operation.
    pub operation: Operation,
    /// The idempotency key.
    pub key: String,
    /// The state before.
    pub from: State,
    /// The state after.
    pub to: State,
    /// The answer that moved it.
    pub outcome: RecordedOutcome,
}

/// What one [`Journal::recover`] did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct RecoveryReport {
    /// Every entry whose state changed.
    pub changes: Vec<Change>,
    /// Entries looked at.
    pub examined: usize,
    /// Entries still open afterwards (Pending, or an outcome still unknown), by this run.
    pub still_open: usize,
    /// Of those, the ones whose last attempt did not reach the service, or whose outcome is
    /// unknown after a transport failure.
    pub unreachable: usize,
    /// Entries this run moved to `needs-operator`, or (asked to work them again with
    /// [`Recovery::retry_needs_operator`]) left there.
    pub needs_operator: usize,
    /// Entries of a service no client was given for.
    pub skipped: usize,
    /// Open entries another process holds the lease of (it is sending or recovering them, or
    /// it died on another host and its lease has not run out yet), and entries waiting for an
    /// operator that another process is working again: not looked at by this run, and not
    /// settled yet.
    pub held_elsewhere: Vec<HeldElsewhere>,
    /// Entries whose holder was a process of this host that is gone: taken over at once.
    pub taken_from_dead: usize,
    /// Rows this version cannot read: an open one went to `needs-operator` with the reason
    /// (nothing sent); the others are listed as they are.
    pub unreadable: Vec<crate::Unreadable>,
    /// Entries this run sent (or asked about) whose answer it could not write to the journal
    /// (a full disk, a database that went away): they stay open, and the next recovery reads
    /// them again with the same key. What was sent is in `changes` all the same.
    pub unrecorded: Vec<Change>,
    /// Entries recorded for another service or account than the client given (a sandbox's
    /// entry met by production settings, or another account's): left as they are, open, for a
    /// recovery with their own service's settings. Never sent to the wrong one.
    pub other_service: Vec<OtherService>,
}

/// An open entry that another process's lease kept recovery from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct HeldElsewhere {
    /// The service.
    pub service: Service,
    /// The operation.
    pub operation: Operation,
    /// The idempotency key.
    pub key: String,
    /// Its state.
    pub state: State,
    /// The process holding the lease (its journal owner name: this process's own when another
    /// of its tasks holds it, such as a call still in flight or a future dropped before it
    /// finished).
    pub owner: String,
    /// When the lease runs out, unless its holder renews or finishes it.
    #[serde(with = "time::serde::rfc3339")]
    pub until: time::OffsetDateTime,
}

impl HeldElsewhere {
    /// An entry, its lease's holder and the lease's end (ms since the epoch).
    fn of(entry: Entry, holder: Option<String>, until_ms: Option<i64>) -> HeldElsewhere {
        HeldElsewhere {
            service: entry.service,
            operation: entry.operation,
            key: entry.key,
            state: entry.state,
            owner: holder.unwrap_or_default(),
            until: crate::store::time_of(until_ms.unwrap_or_default()),
        }
    }
}

impl RecoveryReport {
    /// True when every entry of the journal that was open is final now: nothing still open,
    /// nothing for an operator, nothing skipped, and nothing held by another process.
    pub fn all_final(&self) -> bool {
        self.still_open == 0
            && self.needs_operator == 0
            && self.skipped == 0
            && self.held_elsewhere.is_empty()
            && self.unreadable.is_empty()
            && self.unrecorded.is_empty()
            && self.other_service.is_empty()
    }
}

impl Journal {
    /// Take every open entry (`intended`, `may-have-arrived`, `pending`) that no live process
    /// holds, and drive it with the same key and the same bytes, by the outcome model:
    ///
    /// - money-transfer send: a Pending one asks the status by Request-id first; the others are
    ///   resent ([`TransferClient::resend`]: `transfer.already.done` is a confirmation, read
    ///   through status), as the spec says for a transfer that may never have arrived;
    /// - money-transfer cancel: the status by LTN decides (`CANCELED_FULL` accepted,
    ///   `RECEIVED` refused); a transfer still `SENT` gets the same cancel again;
    /// - hosted-collect create and refund, top-up pay: the same request again; the service
    ///   replays the recorded result and never acts twice.
    ///
    /// An entry past the [`Recovery::deadline`] goes to `needs-operator` **before** anything is
    /// sent. Each entry is leased while it is worked on (renewed while its call is in flight),
    /// so processes recovering one PostgreSQL journal at once never work on the same entry. An
    /// entry a crashed process of this host held is taken at once (its process is gone); one
    /// held by a process of another host comes back when its lease runs out
    /// ([`JournalBuilder::lease`](crate::JournalBuilder::lease)); until then it is listed in
    /// [`RecoveryReport::held_elsewhere`], never hidden. A row that cannot be read goes to
    /// `needs-operator` with the reason, and the rest proceeds.
    ///
    /// # Examples
    ///
    /// At start-up, before new work, with a client of every service the journal holds entries
    /// for:
    ///
    /// ```no_run
    /// # async fn run(client: whish_money_transfer::TransferClient) -> Result<(), whish_journal::JournalError> {
    /// use std::time::Duration;
    /// use whish_journal::{Clients, Journal, Recovery};
    /// let journal = Journal::open("sqlite:/var/lib/shop/whish-journal.sqlite").await?;
    /// let report = journal
    ///     .recover(
    ///         &Clients::new().transfer(client),
    ///         &Recovery::new().deadline(Duration::from_secs(24 * 3600)),
    ///     )
    ///     .await?;
    /// println!("{} settled, {} still open", report.changes.len(), report.still_open);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// Only when the journal itself cannot be read or written before or between entries; the
    /// service's answers, and an answer this run sent but could not record
    /// ([`RecoveryReport::unrecorded`]), are in the report. After such an error, entries worked
    /// on earlier in the run may have been sent: run it again (never "nothing was sent").
    pub async fn recover(
        &self,
        clients: &Clients,
        options: &Recovery,
    ) -> Result<RecoveryReport, JournalError> {
        // This process's own outcomes still being written are not open entries to recover.
        self.inner.background_written().await;
        let owner = self.inner.owner.as_str();
        let lease_ms = millis(self.inner.lease);
        let mut report = RecoveryReport::default();
        // A holder that is a process of this host and is gone leaves its entries at once,
        // instead of after its lease.
        for held in self.inner.db.leased_elsewhere(owner).await? {
            if let Some(holder) = &held.holder
                && crate::owner::is_gone_here(holder)
                && self
                    .inner
                    .db
                    .release_dead(held.lease.id, holder, held.lease.token)
                    .await?
            {
                report.taken_from_dead += 1;
            }
        }
        let mut after = 0;
        let mut seen = std::collections::HashSet::new();
        loop {
            let batch = self
                .inner
                .db
                .claim_open(
                    owner,
                    lease_ms,
                    after,
                    options.batch,
                    options.take_over,
                    options.retry_needs_operator,
                )
                .await?;
            let Some(last) = batch.last() else { break };
            after = last.lease.id;
            for claimed in batch {
                seen.insert(claimed.lease.id);
                self.work(clients, options, claimed, &mut report).await?;
            }
        }
        // Entries a live holder kept from the pass above and has since released (its call
        // ended open): the cursor went past them, so look again, once each, instead of
        // reporting all final while one is open.
        let (open, _) = self.inner.db.open_entries().await?;
        for entry in open {
            let wanted = entry.state.is_open()
                || (options.retry_needs_operator && entry.state == State::NeedsOperator);
            if !wanted || seen.contains(&entry.id) {
                continue;
            }
            // Still open and free now (not finished by its holder meanwhile).
            if let Some(claimed) = self
                .inner
                .db
                .claim_one(entry.id, owner, lease_ms, options.retry_needs_operator)
                .await?
            {
                seen.insert(entry.id);
                self.work(clients, options, claimed, &mut report).await?;
            }
        }
        if !options.take_over {
            // Held by another process, or by another task of this one (a call in flight, or a
            // dropped future whose lease has not run out: the owner "" matches no holder): not
            // final, and never hidden.
            for held in self.inner.db.leased_elsewhere("").await? {
                let entry = match held.entry {
                    Ok(entry) => entry,
                    // Held, and its row cannot be read: listed as unreadable, with its holder.
                    Err(e) => {
                        report.unreadable.push(crate::Unreadable {
                            id: held.lease.id,
                            key: held.key,
                            reason: format!(
                                "held by {} now, and its row cannot be read: {e}",
                                held.holder.as_deref().unwrap_or("another process")
                            ),
                        });
                        continue;
                    }
                };
                report
                    .held_elsewhere
                    .push(HeldElsewhere::of(entry, held.holder, held.until_ms));
            }
        }
        for (id, key, state) in self.inner.db.unknown_states().await? {
            report.unreadable.push(crate::Unreadable {
                id,
                key,
                reason: format!(
                    "state `{}` is unknown to this version; recovery leaves it as it is",
                    state.escape_debug()
                ),
            });
        }
        // The journal's gauges (feature `metrics`): what is left open, what waits for a person.
        if cfg!(feature = "metrics") {
            let (left, _) = self.inner.db.open_entries().await?;
            let needs_operator = left
                .iter()
                .filter(|e| e.state == State::NeedsOperator)
                .count();
            whish_core::metrics::journal_gauges(left.len() - needs_operator, needs_operator);
        }
        Ok(report)
    }
}

impl Journal {
    /// [`recover`](Self::recover) for these entries only (by service, operation and key): each
    /// that is open, or waiting for the operator when
    /// [`Recovery::retry_needs_operator`] says so, is leased and settled exactly as `recover`
    /// settles it, with `options`' deadline. Entries of other keys are not touched: a caller
    /// settles the entries of its own requests this way (one payout batch's rows, say), never
    /// another's. An entry another process (or another task of this one) holds is left to it
    /// and listed in [`RecoveryReport::held_elsewhere`]; one a dead process of this host held is
    /// taken at once. Keys with no entry, or a final one, are skipped.
    ///
    /// # Errors
    ///
    /// As [`recover`](Self::recover): only when the journal itself cannot be read or written;
    /// entries worked before the error may have been sent.
    pub async fn recover_entries(
        &self,
        clients: &Clients,
        options: &Recovery,
        entries: &[(Service, Operation, &str)],
    ) -> Result<RecoveryReport, JournalError> {
        let owner = self.inner.owner.as_str();
        let lease_ms = millis(self.inner.lease);
        let mut report = RecoveryReport::default();
        for &(service, operation, key) in entries {
            let Some(entry) = self.inner.db.get(service, operation, key).await? else {
                continue;
            };
            let wanted = entry.state.is_open()
                || (options.retry_needs_operator && entry.state == State::NeedsOperator);
            if !wanted {
                continue;
            }
            if self.free_if_its_holder_died(entry.id).await? {
                report.taken_from_dead += 1;
            }
            match self
                .inner
                .db
                .claim_one(entry.id, owner, lease_ms, options.retry_needs_operator)
                .await?
            {
                Some(claimed) => self.work(clients, options, claimed, &mut report).await?,
                // Held by another process, or another task of this one: named, never hidden.
                None => match self.held_now(entry.id).await? {
                    Some(held) => report.held_elsewhere.push(HeldElsewhere::of(
                        entry,
                        held.holder,
                        held.until_ms,
                    )),
                    // Settled by its holder meanwhile, or moved on: read it again.
                    None => report.still_open += 1,
                },
            }
        }
        Ok(report)
    }

    /// Free the lease on entry `id` when its holder is a process of this host that is gone
    /// (killed): true when it was freed.
    pub(crate) async fn free_if_its_holder_died(&self, id: i64) -> Result<bool, JournalError> {
        match self.held_now(id).await? {
            Some(held)
                if held
                    .holder
                    .as_deref()
                    .is_some_and(crate::owner::is_gone_here) =>
            {
                let holder = held.holder.as_deref().unwrap_or_default();
                self.inner
                    .db
                    .release_dead(held.lease.id, holder, held.lease.token)
                    .await
            }
            _ => Ok(false),
        }
    }

    /// The unexpired lease on entry `id` now, of another process or of another task of this
    /// one (the owner "" matches no holder), if any.
    pub(crate) async fn held_now(
        &self,
        id: i64,
    ) -> Result<Option<crate::store::Claimed>, JournalError> {
        Ok(self
            .inner
            .db
            .leased_elsewhere("")
            .await?
            .into_iter()
            .find(|h| h.lease.id == id))
    }

    /// Work one leased entry: to an operator when it cannot be read or is past its deadline
    /// (nothing sent), else drive it with its service under its lease, and record the answer.
    async fn work(
        &self,
        clients: &Clients,
        options: &Recovery,
        claimed: crate::store::Claimed,
        report: &mut RecoveryReport,
    ) -> Result<(), JournalError> {
        let owner = self.inner.owner.as_str();
        report.examined += 1;
        let lease = claimed.lease;
        let entry = match claimed.entry {
            Ok(entry) => entry,
            Err(e) => {
                // One bad row never stops the others: it goes to an operator.
                let reason = e.to_string();
                self.inner.db.quarantine(lease, owner, &reason).await?;
                report.needs_operator += 1;
                report.unreadable.push(crate::Unreadable {
                    id: lease.id,
                    key: claimed.key,
                    reason,
                });
                return Ok(());
            }
        };
        // Another service's entry: never sent, nor moved to the operator, by this one's client.
        if let Some(other) = clients.other_service(&entry) {
            self.inner.db.release(lease, owner).await?;
            report.other_service.push(other);
            return Ok(());
        }
        // Past its deadline: an operator decides, and nothing is sent first. Of the entries
        // waiting for the operator already (worked again on a person's word), those recorded
        // before the deadline given, and those whose row could not be read (quarantined: what
        // it holds is not to be trusted, even if it reads now), stay as they are.
        let overdue = overdue(&entry, options.deadline, self.inner.db.now().await?);
        let quarantined = entry
            .outcome
            .as_ref()
            .is_some_and(|o| o.result == UNREADABLE);
        if entry.state == State::NeedsOperator && (overdue || quarantined) {
            self.inner.db.release(lease, owner).await?;
            report.needs_operator += 1;
            return Ok(());
        }
        if overdue {
            let mut outcome = entry
                .outcome
                .clone()
                .unwrap_or_else(|| RecordedOutcome::new("unknown"));
            outcome.message = Some(format!(
                "still {} after the recovery deadline; nothing was sent by this recovery",
                entry.state
            ));
            self.inner
                .db
                .mark_needs_operator(lease, owner, &outcome)
                .await?;
            report.needs_operator += 1;
            report.changes.push(Change {
                service: entry.service,
                operation: entry.operation,
                key: entry.key.clone(),
                from: entry.state,
                to: State::NeedsOperator,
                outcome,
            });
            return Ok(());
        }
        let held = crate::journaled::Held {
            lease,
            resend: true,
        };
        let (driven, lost) = self.while_held(&held, drive(clients, &entry)).await;
        let Some(verdict) = driven else {
            report.skipped += 1;
            self.inner.db.release(lease, owner).await?;
            return Ok(());
        };
        if lost {
            // Another process took it over meanwhile: its answer is the journal's.
            report.still_open += 1;
            return Ok(());
        }
        let to = verdict.state.unwrap_or(entry.state);
        if to == State::NeedsOperator {
            report.needs_operator += 1;
        }
        if to.is_open() {
            report.still_open += 1;
            if matches!(verdict.outcome.result.as_str(), "unknown" | "not-sent") {
                report.unreachable += 1;
            }
        }
        let written = self
            .inner
            .db
            .finish(lease, owner, to, &verdict.outcome, &verdict.refs)
            .await;
        let moved = change(&entry, to, verdict);
        match written {
            Ok(_) => {
                if to != entry.state {
                    report.changes.push(moved);
                }
            }
            Err(e) => {
                // The request may just have been sent: say what was done, and that it
                // is not recorded; never "nothing was sent".
                tracing::warn!(entry = lease.id, error = %e, "recovery could not record an answer");
                report.unrecorded.push(moved);
            }
        }
        Ok(())
    }
}

/// True when the entry was recorded longer than `deadline` before `now` (the database's clock,
/// which also stamped its creation).
fn overdue(entry: &Entry, deadline: Duration, now: i64) -> bool {
    let created_ms = (entry.created.unix_timestamp_nanos() / 1_000_000) as i64;
    crate::lifecycle::overdue(created_ms, millis(deadline), now)
}

fn change(entry: &Entry, to: State, verdict: Recording) -> Change {
    Change {
        service: entry.service,
        operation: entry.operation,
        key: entry.key.clone(),
        from: entry.state,
        to,
        outcome: verdict.outcome,
    }
}

fn unreadable(what: &str, e: impl std::fmt::Display) -> Recording {
    let mut outcome = RecordedOutcome::new("unreadable");
    outcome.message = Some(format!("the stored {what} cannot be rebuilt: {e}"));
    Recording {
        state: Some(State::NeedsOperator),
        outcome,
        refs: Default::default(),
    }
}

/// Work one entry with its service; `None` when no client was given for it.
#[allow(unreachable_code)]
async fn drive(clients: &Clients, entry: &Entry) -> Option<Recording> {
    let body = entry.request.clone();
    Some(match (entry.service, entry.operation) {
        #[cfg(feature = "money-transfer")]
        (Service::MoneyTransfer, Operation::Send) => {
            let client = clients.transfer.as_ref()?;
            let prepared = match request_id(&entry.key)
                .and_then(|id| PreparedTransfer::from_stored(id, body).map_err(|e| e.to_string()))
            {
                Ok(p) => p,
                Err(e) => return Some(unreadable("transfer", e)),
            };
            if matches!(entry.state, State::Pending | State::NeedsOperator) {
                // The spec: a Pending create is followed up with status; a transfer the
                // records do not hold is resent with the same Request-id. One a person sends
                // back from `needs-operator` is read first too: it is old, and if it arrived
                // it is confirmed without another send.
                match client
                    .held_under(prepared.request_id(), Some(&prepared), false)
                    .await
                {
                    // Maybe someone else's transfer under the same Request-id: nothing is
                    // settled (the next recovery reads it again).
                    Held::MaybeSomeoneElses(_) => {
                        let mut outcome = RecordedOutcome::new("unknown");
                        outcome.message = Some(format!(
                            "the service holds a transfer under Request-id {}, and the activity log lists it with another amount or currency than this request, or could not be read to tell: not confirmed, and not sent again; recovery reads it again, and a person must look if it stays so",
                            prepared.request_id()
                        ));
                        return Some(Recording {
                            state: None,
                            outcome,
                            refs: crate::entry::References::default(),
                        });
                    }
                    Held::This(status) => {
                        return Some(Recording::accepted("confirmed", status_refs(&status)));
                    }
                    Held::Unknown(e) => return Some(Recording::of_error(&e, true).keep_open()),
                    // Not held: sent again with its own Request-id.
                    _ => {}
                }
            }
            send_verdict(&client.resend(&prepared).await, true)
        }
        #[cfg(feature = "money-transfer")]
        (Service::MoneyTransfer, Operation::Cancel) => {
            let client = clients.transfer.as_ref()?;
            let prepared = match request_id(&entry.key)
                .and_then(|id| PreparedCancel::from_stored(id, body).map_err(|e| e.to_string()))
            {
                Ok(p) => p,
                Err(e) => return Some(unreadable("cancel", e)),
            };
            let query = StatusQuery::LtnNumber(prepared.ltn_number().to_owned());
            match client.status(&query).await {
                Ok(s) if s.status == TransferStatus::CanceledFull => {
                    Recording::accepted("confirmed", status_refs(&s))
                }
                Ok(s) if s.status == TransferStatus::Sent => {
                    cancel_verdict(&client.cancel(&prepared).await, true)
                }
                Ok(s) => {
                    // RECEIVED (or a status this version does not know): the cancel did not
                    // and cannot apply.
                    let mut v = Recording::accepted("refused", status_refs(&s));
                    v.state = Some(State::Refused);
                    v.outcome.message = Some(format!("the transfer is {}", s.status));
                    v
                }
                // A status read that did not answer says nothing of the cancel (a code such
                // as `api.account.invalid_request` is the status read's own refusal): the
                // entry stays where it was.
                Err(e) => Recording::of_error(&e, true).keep_open(),
            }
        }
        #[cfg(feature = "hosted-collect")]
        (Service::HostedCollect, Operation::Create) => {
            let client = clients.collect.as_ref()?;
            match PreparedPayment::from_stored(body) {
                Ok(p) => create_verdict(&client.create_payment(&p).await, true),
                Err(e) => unreadable("payment", e),
            }
        }
        #[cfg(feature = "hosted-collect")]
        (Service::HostedCollect, Operation::Refund) => {
            let client = clients.collect.as_ref()?;
            match PreparedRefund::from_stored(body) {
                Ok(p) => refund_verdict(&client.refund(&p).await, true),
                Err(e) => unreadable("refund", e),
            }
        }
        #[cfg(feature = "intl-topup")]
        (Service::IntlTopup, Operation::Pay) => {
            let client = clients.topup.as_ref()?;
            match PreparedPay::from_stored(entry.context.as_deref().unwrap_or_default(), body) {
                Ok(p) => pay_verdict(&client.pay(&p).await, true),
                Err(e) => unreadable("payment", e),
            }
        }
        // A service this build leaves out: as if no client were given for it.
        #[cfg(not(feature = "money-transfer"))]
        (Service::MoneyTransfer, Operation::Send | Operation::Cancel) => return None,
        #[cfg(not(feature = "hosted-collect"))]
        (Service::HostedCollect, Operation::Create | Operation::Refund) => return None,
        #[cfg(not(feature = "intl-topup"))]
        (Service::IntlTopup, Operation::Pay) => return None,
        (service, operation) => {
            return Some(unreadable(
                "entry",
                format!("{service} has no {operation} operation"),
            ));
        }
    })
}

#[cfg(feature = "money-transfer")]
pub(crate) fn request_id(key: &str) -> Result<RequestId, String> {
    key.parse::<i64>()
        .map_err(|e| e.to_string())
        .and_then(|n| RequestId::new(n).map_err(|e| e.to_string()))
}

#[cfg(feature = "money-transfer")]
impl Recording {
    /// A status read that did not answer proves nothing about the request: the entry stays
    /// where it was.
    fn keep_open(mut self) -> Recording {
        if !self.state.is_some_and(State::is_open) {
            self.state = None;
        }
        self
    }
}
