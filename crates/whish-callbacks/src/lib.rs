//! Receiving the services' callbacks in production: an axum [`Router`] for each callback the
//! services send, an inbox every change is recorded in before it is acknowledged, workers that
//! hand each change on, and a poller for the callbacks that never come.
//!
//! - **The inbox** ([`Inbox`]): a callback is answered 200 only once its change is written,
//!   with what finishing it needs (the verified transfer body; the collect callback's payment);
//!   a write that fails or cannot be confirmed answers 503, and the service delivers again.
//!   [`InMemory`] by default; the journal (feature `journal`) for a restart or a second
//!   receiver that loses nothing.
//! - **Workers** take each change under the inbox's lease, renewed every third of it while they
//!   work, and hand it on: your handler gets a [`TransferNotification`] or a [`PaymentUpdate`]
//!   with the change's stable `key`. A failed, panicking or timed-out status read or handler is
//!   tried again with backoff until a deadline ([`RetrySettings`]), then waits for a person
//!   (`whish inbox`). A worker that dies leaves its lease to run out; a receiver resumes the
//!   unfinished changes when it starts.
//! - **The handler's contract**: at least once. A handler sees a change twice only when its
//!   process dies (or loses the inbox for a whole lease) after the handler returned and before
//!   the change was marked handed on: make your side effects idempotent on `key`.
//! - **Transfer collection callback** (`POST`, `timestamp` and `signature` headers): the body
//!   is read with a limit (413 beyond it), the signature checked through your
//!   [`SignatureVerifier`] (401), a timestamp further than the window from now refused (401;
//!   [`DEFAULT_TOLERANCE`] unless you set another). A notification, not proof: confirm it with
//!   [`TransferNotification::confirm`].
//! - **Hosted-collect callbacks** (`GET`, no body, only your reference in the query): recorded
//!   as a signal; a worker reads the payment's status and hands on what the status endpoint
//!   says, once per status. A success callback whose status does not show the payment settled
//!   yet is read again after a backoff. [`confirm_redirect`] does the same for the payer's
//!   redirect pages.
//! - **The poller** ([`Receiver::start_poller`]): watched transfers and payments are read with
//!   backoff and recorded in the same inbox under the same keys; an item is forgotten once its
//!   final change was handed on.
//! - **Serving** ([`Receiver::serve`]): a cap on a request's head, a deadline for it, and a
//!   connection cap that sheds the connections slowest to send their heads first; a replay of
//!   a change recorded lately is answered before it takes a slot or a write.
//!
//! # Examples
//!
//! ```no_run
//! # async fn run(transfer: whish_money_transfer::TransferClient,
//! #              collect: whish_hosted_collect::CollectClient) -> Result<(), Box<dyn std::error::Error>> {
//! use whish_callbacks::{HandlerError, PaymentUpdate, Receiver, TransferNotification};
//! use whish_money_transfer::callback::SignedInput;
//!
//! let verifier = |input: &SignedInput<'_>| {
//!     // the scheme your operator gives you, compared in constant time
//!     # let _ = input;
//!     true
//! };
//! let confirm_with = transfer.clone();
//! let receiver = Receiver::builder()
//!     .transfer(verifier, move |n: TransferNotification| {
//!         let client = confirm_with.clone();
//!         async move {
//!             let state = n.confirm(&client).await?; // a notification is not proof
//!             println!("{} is {}", n.transfer_id, state.status);
//!             Ok::<(), HandlerError>(())
//!         }
//!     })
//!     .transfer_client(transfer)
//!     .collect(collect, |u: PaymentUpdate| async move {
//!         if u.status.collect_status.is_paid() {
//!             println!("fulfil order {}", u.external_id);
//!         }
//!         Ok::<(), HandlerError>(())
//!     })
//!     .build();
//! receiver.start_poller(Default::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! receiver.serve(listener, whish_callbacks::ServeLimits::new()).await?;
//! receiver.shutdown().await;
//! # Ok(()) }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

mod change;
mod collect;
mod handler;
mod inbox;
#[cfg(feature = "journal")]
mod journal;
mod poller;
mod record;
mod replay;
mod serve;
mod transfer;
mod work;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::sync::Semaphore;
use whish_core::{Currency, ExternalId, RequestId};
use whish_hosted_collect::CollectClient;
use whish_money_transfer::TransferClient;
use whish_money_transfer::callback::{CallbackReceiver, SignatureVerifier, SignedInput};

pub use handler::{
    Handler, HandlerError, PaymentUpdate, RedirectVerdict, Source, TransferNotification, Trigger,
    confirm_redirect,
};
pub use inbox::{
    BoxFuture, ChangeKind, ChangeState, Held, IN_MEMORY_CAPACITY, InMemory, Inbox, StoreError,
};
pub use poller::PollSettings;
pub use serve::ServeLimits;
pub use work::RetrySettings;

/// The axum the receiver's routes are built with: merge [`Receiver::router`] into an app of this
/// version (`whish::callbacks::axum::Router`), with no axum dependency of your own to keep in
/// step.
pub use axum;

use handler::DynHandler;

/// The paths the router serves by default.
pub const TRANSFER_PATH: &str = "/whish/transfer";
/// The success callback path by default.
pub const SUCCESS_PATH: &str = "/whish/collect/success";
/// The failure callback path by default.
pub const FAILURE_PATH: &str = "/whish/collect/failure";

/// How far a signed transfer callback's timestamp may be from now by default (1 hour): an
/// older one is refused (401). The specification states no redelivery policy; if your
/// operator's redeliveries keep the first timestamp for longer, widen it with
/// [`ReceiverBuilder::tolerance`].
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(3600);

struct DynVerifier(Arc<dyn SignatureVerifier>);

impl SignatureVerifier for DynVerifier {
    fn verify(&self, input: &SignedInput<'_>) -> bool {
        self.0.verify(input)
    }
}

struct TransferSide {
    receiver: CallbackReceiver<DynVerifier>,
    handler: DynHandler<TransferNotification>,
}

struct CollectSide {
    client: CollectClient,
    handler: DynHandler<PaymentUpdate>,
    reference: String,
    currency_param: String,
    currency: Option<Currency>,
}

pub(crate) struct Shared {
    inbox: Arc<dyn Inbox>,
    /// Records in flight of the signed transfer callbacks.
    transfer_slots: Arc<Semaphore>,
    /// Records in flight of the unauthenticated collect GETs: apart, so that a flood of them
    /// cannot take the slots of signed callbacks.
    collect_slots: Arc<Semaphore>,
    /// Transfer changes being handed on.
    transfer_workers: Arc<Semaphore>,
    /// Collect changes being handed on (each may read a status first): apart, so that the
    /// signals of a flood of unauthenticated GETs cannot hold up the transfer changes.
    collect_workers: Arc<Semaphore>,
    max_in_flight: u32,
    recent: replay::Recent,
    handler_timeout: Duration,
    /// The timestamp window of the signed transfer callbacks.
    tolerance: Duration,
    retry: RetrySettings,
    pump_interval: Duration,
    pumping: AtomicBool,
    transfer: Option<TransferSide>,
    transfer_client: Option<TransferClient>,
    collect: Option<CollectSide>,
    watched: Mutex<poller::Watched>,
    stop: tokio::sync::watch::Sender<bool>,
}

/// Builds a [`Receiver`]. Configure the transfer side, the collect side, or both.
#[must_use = "a builder does nothing until build() is called"]
pub struct ReceiverBuilder {
    inbox: Arc<dyn Inbox>,
    transfer: Option<TransferSide>,
    transfer_client: Option<TransferClient>,
    collect: Option<CollectSide>,
    tolerance: Duration,
    body_limit: usize,
    request_timeout: Duration,
    handler_timeout: Duration,
    retry: RetrySettings,
    pump_interval: Duration,
    max_in_flight: u32,
    paths: (String, String, String),
}

impl ReceiverBuilder {
    /// Receive the transfer collection callback: verify it with `verifier` (the scheme your
    /// operator documents; `AcceptUnverified` says out loud that nothing is checked) and hand
    /// each new status change to `handler`.
    pub fn transfer(
        mut self,
        verifier: impl SignatureVerifier + 'static,
        handler: impl Handler<TransferNotification>,
    ) -> Self {
        self.transfer = Some(TransferSide {
            receiver: CallbackReceiver::new(DynVerifier(Arc::new(verifier))),
            handler: Arc::new(handler),
        });
        self
    }

    /// The transfer client the poller reads status with.
    pub fn transfer_client(mut self, client: TransferClient) -> Self {
        self.transfer_client = Some(client);
        self
    }

    /// Receive the hosted-collect success and failure callbacks: read each payment's status
    /// with `client` and hand each new status to `handler`.
    pub fn collect(mut self, client: CollectClient, handler: impl Handler<PaymentUpdate>) -> Self {
        self.collect = Some(CollectSide {
            client,
            handler: Arc::new(handler),
            reference: "externalId".to_owned(),
            currency_param: "currency".to_owned(),
            currency: None,
        });
        self
    }

    /// The query parameter of your callback addresses that holds the payment's externalId
    /// (default `externalId`; put it in with `SuccessCallbackUrl::with_reference`). Call after
    /// [`collect`](Self::collect).
    pub fn collect_reference(mut self, name: impl Into<String>) -> Self {
        if let Some(c) = &mut self.collect {
            c.reference = name.into();
        }
        self
    }

    /// The currency of payments whose callback address names none (the `currency` query
    /// parameter, USD or LBP, wins when present). Call after [`collect`](Self::collect).
    pub fn collect_currency(mut self, currency: Currency) -> Self {
        if let Some(c) = &mut self.collect {
            c.currency = Some(currency);
        }
        self
    }

    /// Where the changes are recorded (default: [`InMemory`]). With the `journal` feature a
    /// `whish_journal::Journal` is one: a restart, a second receiver or a dead worker then
    /// loses nothing and hands nothing on twice outside the documented window.
    ///
    /// # Examples
    ///
    /// Two receivers (two processes, or two hosts on PostgreSQL) sharing one journal as their
    /// inbox: a change either one records is handed on once, by whichever worker takes it.
    ///
    /// ```no_run
    /// # #[cfg(feature = "journal")]
    /// # async fn run(
    /// #     collect: whish_hosted_collect::CollectClient,
    /// # ) -> Result<(), Box<dyn std::error::Error>> {
    /// use whish_callbacks::{HandlerError, PaymentUpdate, Receiver};
    /// let journal = whish_journal::Journal::open("sqlite:whish/journal-live.sqlite").await?;
    /// let receiver = Receiver::builder()
    ///     .inbox(journal)
    ///     .collect(collect, |u: PaymentUpdate| async move {
    ///         println!("{} is {:?}", u.external_id, u.status.collect_status);
    ///         Ok::<(), HandlerError>(())
    ///     })
    ///     .build();
    /// # let _ = receiver;
    /// # Ok(()) }
    /// ```
    pub fn inbox(mut self, inbox: impl Inbox) -> Self {
        self.inbox = Arc::new(inbox);
        self
    }

    /// Refuse transfer callbacks whose timestamp is further than this from now (401). Default
    /// [`DEFAULT_TOLERANCE`]; `Duration::MAX` turns the check off.
    pub fn tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// The largest transfer callback body read (default 16 KiB; 413 beyond it).
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// The deadline of one request, body included (default 10 s; 408 after it). A change whose
    /// write had begun is still recorded and handed on.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long one status read or one handler call may run (default 60 s); after it, it is
    /// stopped and counts as a failure, tried again after the backoff.
    pub fn handler_timeout(mut self, timeout: Duration) -> Self {
        self.handler_timeout = timeout;
        self
    }

    /// How a failed hand-on is tried again (default: from 1 s doubling to 5 min, for 24 h).
    pub fn retry(mut self, retry: RetrySettings) -> Self {
        self.retry = retry;
        self
    }

    /// How often the inbox is looked at for changes whose lease is free or over (a dead
    /// worker's, a failure's after its backoff, those left at the last stop); default 1 s.
    pub fn pump_interval(mut self, every: Duration) -> Self {
        self.pump_interval = every.max(Duration::from_millis(10));
        self
    }

    /// How many records are in flight at once and how many changes are handed on at once
    /// (default 64 each), for the transfer changes and, apart, for the collect changes (the
    /// unauthenticated GETs, each needing a status read): a flood of one kind cannot starve the
    /// other. A callback arriving when all the records of its kind are in flight gets 503, and
    /// the service delivers it again.
    pub fn max_in_flight(mut self, n: u32) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// The path of the transfer callback POST (default [`TRANSFER_PATH`]).
    pub fn transfer_path(mut self, path: impl Into<String>) -> Self {
        self.paths.0 = path.into();
        self
    }

    /// The path of the collect success callback GET (default [`SUCCESS_PATH`]).
    pub fn success_path(mut self, path: impl Into<String>) -> Self {
        self.paths.1 = path.into();
        self
    }

    /// The path of the collect failure callback GET (default [`FAILURE_PATH`]).
    pub fn failure_path(mut self, path: impl Into<String>) -> Self {
        self.paths.2 = path.into();
        self
    }

    /// The receiver.
    pub fn build(mut self) -> Receiver {
        if let Some(t) = self.transfer.take() {
            self.transfer = Some(TransferSide {
                receiver: t.receiver.tolerance(self.tolerance),
                handler: t.handler,
            });
        }
        let (stop, _) = tokio::sync::watch::channel(false);
        let n = self.max_in_flight as usize;
        Receiver {
            shared: Arc::new(Shared {
                inbox: self.inbox,
                transfer_slots: Arc::new(Semaphore::new(n)),
                collect_slots: Arc::new(Semaphore::new(n)),
                transfer_workers: Arc::new(Semaphore::new(n)),
                collect_workers: Arc::new(Semaphore::new(n)),
                max_in_flight: self.max_in_flight,
                recent: replay::Recent::default(),
                handler_timeout: self.handler_timeout,
                tolerance: self.tolerance,
                retry: self.retry,
                pump_interval: self.pump_interval,
                pumping: AtomicBool::new(false),
                transfer: self.transfer,
                transfer_client: self.transfer_client,
                collect: self.collect,
                watched: Mutex::default(),
                stop,
            }),
            body_limit: self.body_limit,
            request_timeout: self.request_timeout,
            paths: self.paths,
        }
    }
}

/// The callback receiver: its [`router`](Self::router), its workers and poller, and its
/// shutdown. Cheap to clone.
#[derive(Clone)]
pub struct Receiver {
    shared: Arc<Shared>,
    body_limit: usize,
    request_timeout: Duration,
    paths: (String, String, String),
}

impl std::fmt::Debug for Receiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver")
            .field("transfer", &self.shared.transfer.is_some())
            .field("collect", &self.shared.collect.is_some())
            .field("paths", &self.paths)
            .finish()
    }
}

impl Receiver {
    /// A builder with the defaults: in-memory inbox, 16 KiB bodies, 10 s per request, 60 s per
    /// handler, 64 changes handed on at once, a 1 hour timestamp window.
    pub fn builder() -> ReceiverBuilder {
        ReceiverBuilder {
            inbox: Arc::new(InMemory::default()),
            transfer: None,
            transfer_client: None,
            collect: None,
            tolerance: DEFAULT_TOLERANCE,
            body_limit: 16 * 1024,
            request_timeout: Duration::from_secs(10),
            handler_timeout: Duration::from_secs(60),
            retry: RetrySettings::default(),
            pump_interval: Duration::from_secs(1),
            max_in_flight: 64,
            paths: (
                TRANSFER_PATH.to_owned(),
                SUCCESS_PATH.to_owned(),
                FAILURE_PATH.to_owned(),
            ),
        }
    }

    /// Start the workers: the changes left unfinished (by this receiver's last run, a dead
    /// one, or a failure's backoff) are taken as their leases end. [`router`](Self::router)
    /// and [`serve`](Self::serve) start them too; call it yourself only to hand on without
    /// serving. Needs a Tokio runtime; a second call does nothing.
    pub fn start(&self) {
        work::start_pump(self.shared.clone());
    }

    /// The routes of the configured sides, with the body limit and the request deadline. Merge
    /// it into your application's router, or serve it alone. Called inside a Tokio runtime, it
    /// starts the workers ([`start`](Self::start)).
    ///
    /// # Examples
    ///
    /// The receiver's routes beside the application's own, behind the same listener:
    ///
    /// ```no_run
    /// # async fn run(receiver: whish_callbacks::Receiver) -> std::io::Result<()> {
    /// let app = axum::Router::new()
    ///     .route("/health", axum::routing::get(|| async { "ok" }))
    ///     .merge(receiver.router());
    /// let listener = tokio::net::TcpListener::bind("0.0.0.0:8080").await?;
    /// axum::serve(listener, app).await?;
    /// receiver.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn router(&self) -> Router {
        if tokio::runtime::Handle::try_current().is_ok() {
            self.start();
        }
        let mut router = Router::new();
        if self.shared.transfer.is_some() {
            router = router.route(
                &self.paths.0,
                post(transfer::route).route_layer(axum::middleware::from_fn_with_state(
                    self.shared.clone(),
                    transfer::check_head,
                )),
            );
        }
        if self.shared.collect.is_some() {
            router = router
                .route(&self.paths.1, get(collect::success))
                .route(&self.paths.2, get(collect::failure));
        }
        let deadline = self.request_timeout;
        router
            .layer(DefaultBodyLimit::max(self.body_limit))
            .layer(axum::middleware::from_fn(
                move |request: Request, next: Next| async move {
                    match tokio::time::timeout(deadline, next.run(request)).await {
                        Ok(response) => response,
                        Err(_) => (StatusCode::REQUEST_TIMEOUT, "request deadline passed\n")
                            .into_response(),
                    }
                },
            ))
            .with_state(self.shared.clone())
    }

    /// Poll this transfer's status until its final change (RECEIVED or CANCELED_FULL) has been
    /// handed on to the transfer handler: for the callback that never comes. Needs
    /// [`ReceiverBuilder::transfer_client`] and a running [`start_poller`](Self::start_poller).
    ///
    /// # Examples
    ///
    /// Watch every transfer as soon as it is sent, so that its collection reaches the handler
    /// whether or not the service's callback does:
    ///
    /// ```no_run
    /// # async fn run(
    /// #     receiver: whish_callbacks::Receiver,
    /// #     journal: whish_journal::Journal,
    /// #     client: whish_money_transfer::TransferClient,
    /// #     prepared: whish_money_transfer::PreparedTransfer,
    /// # ) -> Result<(), Box<dyn std::error::Error>> {
    /// receiver.start_poller(whish_callbacks::PollSettings::default());
    /// let sent = journal.transfer(client).send(&prepared).await?;
    /// receiver.watch_transfer(sent.request_id());
    /// # Ok(()) }
    /// ```
    pub fn watch_transfer(&self, request_id: RequestId) {
        poller::watch(&self.shared, poller::Item::Transfer(request_id));
    }

    /// Poll this payment's status until its final change (success, failed or refunded) has
    /// been handed on to the collect handler.
    pub fn watch_payment(&self, currency: Currency, external_id: ExternalId) {
        poller::watch(&self.shared, poller::Item::Payment(currency, external_id));
    }

    /// Start the poller in the background (and the workers); both stop at
    /// [`shutdown`](Self::shutdown).
    pub fn start_poller(&self, settings: PollSettings) {
        self.start();
        poller::start(self.shared.clone(), settings);
    }

    /// Stop the poller and the workers, take no more callbacks (503), and wait for the changes
    /// being handed on. A change not yet taken stays in the inbox for the next start.
    pub async fn shutdown(&self) {
        let _ = self.shared.stop.send(true);
        let n = self.shared.max_in_flight;
        for slots in [
            &self.shared.transfer_slots,
            &self.shared.collect_slots,
            &self.shared.transfer_workers,
            &self.shared.collect_workers,
        ] {
            if let Ok(all) = slots.acquire_many(n).await {
                all.forget();
            }
            slots.close();
        }
    }
}

impl Shared {
    /// The worker slots of a kind of change.
    pub(crate) fn workers_for(&self, kind: ChangeKind) -> &Arc<Semaphore> {
        match kind {
            ChangeKind::Transfer => &self.transfer_workers,
            ChangeKind::Collect => &self.collect_workers,
        }
    }

    /// The kinds of change this receiver has handlers for.
    pub(crate) fn kinds(&self) -> Vec<ChangeKind> {
        let mut kinds = Vec::new();
        if self.transfer.is_some() {
            kinds.push(ChangeKind::Transfer);
        }
        if self.collect.is_some() {
            kinds.push(ChangeKind::Collect);
        }
        kinds
    }
}

/// The answer of a route, one line of text.
pub(crate) fn answer(status: StatusCode, text: &'static str) -> Response {
    (status, text).into_response()
}

/// The examples of this crate's README, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;
