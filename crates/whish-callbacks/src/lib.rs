//! Receiving the services' callbacks in production: an axum [`Router`] for each callback the
//! services send, and a poller for the ones that never come.
//!
//! - **Transfer collection callback** (`POST`, `timestamp` and `signature` headers, a flat JSON
//!   body): the body is read with a limit (413 beyond it); the signature is checked through your
//!   [`SignatureVerifier`] (401 when it is missing or wrong, nothing handed on); a timestamp
//!   window applies only if you ask for one; each (transfer, status) is claimed in the record of
//!   [`Notifications`] (in memory, or the journal with the `journal` feature) before the 200, so
//!   the sender's redelivery is the safety net; your handler runs in the background and gets a
//!   [`TransferNotification`], which says what it is: a notification. Confirm it with
//!   [`TransferNotification::confirm`].
//! - **Hosted-collect callbacks** (`GET`, no body, only your reference in the query): answered
//!   200 as soon as the record can be written (503, so that the service delivers again, when it
//!   cannot or every slot is busy); the payment's status is then read from the status
//!   endpoint, and your handler gets a [`PaymentUpdate`] holding that status, once per status. A failure callback is one
//!   failed attempt (the update says `pending` while the link is payable); a success callback is
//!   a signal, and the update holds what the status endpoint says. [`confirm_redirect`] does the
//!   same for the payer's redirect pages.
//! - **The poller** ([`Receiver::start_poller`]): the specs reconcile a missing callback by
//!   polling status; watched transfers and payments are polled with backoff until final, and feed
//!   the same handlers through the same record. One handler for both paths.
//!
//! Every request has a deadline (408), the handlers run bounded and timed, the tracing spans
//! carry no secret and no personal data, and [`Receiver::shutdown`] waits for running handlers.
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
//! let app = receiver.router();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app).await?;
//! receiver.shutdown().await;
//! # Ok(()) }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

mod collect;
mod handler;
mod notifications;
mod poller;
mod serve;
mod tasks;
mod transfer;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use whish_core::{Currency, ExternalId, RequestId};
use whish_hosted_collect::CollectClient;
use whish_money_transfer::TransferClient;
use whish_money_transfer::callback::{CallbackReceiver, SignatureVerifier, SignedInput};

pub use handler::{
    Handler, HandlerError, PaymentUpdate, RedirectVerdict, Source, TransferNotification, Trigger,
    confirm_redirect,
};
pub use notifications::{BoxFuture, IN_MEMORY_CAPACITY, InMemory, Notifications, StoreError};
pub use poller::PollSettings;
pub use serve::ServeLimits;

/// The axum the receiver's routes are built with: merge [`Receiver::router`] into an app of this
/// version (`whish::callbacks::axum::Router`), with no axum dependency of your own to keep in
/// step.
pub use axum;

use handler::DynHandler;
use tasks::Tasks;

/// The paths the router serves by default.
pub const TRANSFER_PATH: &str = "/whish/transfer";
/// The success callback path by default.
pub const SUCCESS_PATH: &str = "/whish/collect/success";
/// The failure callback path by default.
pub const FAILURE_PATH: &str = "/whish/collect/failure";

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
    notifications: Arc<dyn Notifications>,
    /// Slots of the signed transfer callbacks.
    tasks: Tasks,
    /// Slots of the unauthenticated collect GETs: apart, so that a flood of them (each asks a
    /// status endpoint) cannot take the slots of signed callbacks.
    collect_tasks: Tasks,
    handler_timeout: Duration,
    transfer: Option<TransferSide>,
    transfer_client: Option<TransferClient>,
    collect: Option<CollectSide>,
    watched: Mutex<poller::Watched>,
    stop: tokio::sync::watch::Sender<bool>,
}

/// Builds a [`Receiver`]. Configure the transfer side, the collect side, or both.
#[must_use = "a builder does nothing until build() is called"]
pub struct ReceiverBuilder {
    notifications: Arc<dyn Notifications>,
    transfer: Option<TransferSide>,
    transfer_client: Option<TransferClient>,
    collect: Option<CollectSide>,
    tolerance: Option<Duration>,
    body_limit: usize,
    request_timeout: Duration,
    handler_timeout: Duration,
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

    /// Where the handed-on pairs are recorded (default: [`InMemory`]). With the `journal`
    /// feature a `whish_journal::Journal` is one: a restart or a second process then hands
    /// nothing on twice.
    pub fn notifications(mut self, record: impl Notifications) -> Self {
        self.notifications = Arc::new(record);
        self
    }

    /// Refuse transfer callbacks whose timestamp is further than this from now (401). Off by
    /// default: the specification sets no window, and a late genuine callback is still only a
    /// notification.
    pub fn tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance = Some(tolerance);
        self
    }

    /// The largest transfer callback body read (default 16 KiB; 413 beyond it).
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// The deadline of one request, body included (default 10 s; 408 after it).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long a handler (with the status read before it) may run (default 60 s); after it,
    /// its notification is handed on again at the next sighting.
    pub fn handler_timeout(mut self, timeout: Duration) -> Self {
        self.handler_timeout = timeout;
        self
    }

    /// How many handlers run at once (default 64), for the signed transfer callbacks and, apart,
    /// as many again for the unauthenticated collect GETs (each reads a status first): a flood
    /// of one kind cannot starve the other. A callback arriving when all of its kind run gets
    /// 503, so the sender delivers it again later.
    pub fn max_in_flight(mut self, n: u32) -> Self {
        self.max_in_flight = n;
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
        if let Some(tolerance) = self.tolerance
            && let Some(t) = self.transfer.take()
        {
            self.transfer = Some(TransferSide {
                receiver: t.receiver.tolerance(tolerance),
                handler: t.handler,
            });
        }
        let (stop, _) = tokio::sync::watch::channel(false);
        Receiver {
            shared: Arc::new(Shared {
                notifications: self.notifications,
                tasks: Tasks::new(self.max_in_flight),
                collect_tasks: Tasks::new(self.max_in_flight),
                handler_timeout: self.handler_timeout,
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

/// The callback receiver: its [`router`](Self::router), its poller, and its shutdown. Cheap to
/// clone.
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
    /// A builder with the defaults: in-memory record, 16 KiB bodies, 10 s per request, 60 s per
    /// handler, 64 handlers at once.
    pub fn builder() -> ReceiverBuilder {
        ReceiverBuilder {
            notifications: Arc::new(InMemory::default()),
            transfer: None,
            transfer_client: None,
            collect: None,
            tolerance: None,
            body_limit: 16 * 1024,
            request_timeout: Duration::from_secs(10),
            handler_timeout: Duration::from_secs(60),
            max_in_flight: 64,
            paths: (
                TRANSFER_PATH.to_owned(),
                SUCCESS_PATH.to_owned(),
                FAILURE_PATH.to_owned(),
            ),
        }
    }

    /// The routes of the configured sides, with the body limit and the request deadline. Merge
    /// it into your application's router, or serve it alone.
    pub fn router(&self) -> Router {
        let mut router = Router::new();
        if self.shared.transfer.is_some() {
            router = router.route(&self.paths.0, post(transfer::route));
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

    /// Poll this transfer's status until it is final (RECEIVED or CANCELED_FULL), handing each
    /// new status to the transfer handler: for the callback that never comes. Needs
    /// [`ReceiverBuilder::transfer_client`] and a running [`start_poller`](Self::start_poller).
    pub fn watch_transfer(&self, request_id: RequestId) {
        poller::watch(&self.shared, poller::Item::Transfer(request_id));
    }

    /// Poll this payment's status until it is settled or refunded, handing each new status to
    /// the collect handler.
    pub fn watch_payment(&self, currency: Currency, external_id: ExternalId) {
        poller::watch(&self.shared, poller::Item::Payment(currency, external_id));
    }

    /// Start the poller in the background; it stops at [`shutdown`](Self::shutdown).
    pub fn start_poller(&self, settings: PollSettings) {
        poller::start(self.shared.clone(), settings);
    }

    /// Stop the poller, take no more callbacks (503), and wait for the running handlers.
    pub async fn shutdown(&self) {
        let _ = self.shared.stop.send(true);
        self.shared.tasks.shutdown().await;
        self.shared.collect_tasks.shutdown().await;
    }
}

/// The answer of a route, one line of text.
pub(crate) fn answer(status: StatusCode, text: &'static str) -> Response {
    (status, text).into_response()
}

/// Claim a (subject, status), run the handler, complete or release. Errors are logged: the
/// notification is then handed on again at the next sighting.
pub(crate) async fn deliver<N: Send + 'static>(
    shared: &Shared,
    subject: String,
    status: String,
    handler: DynHandler<N>,
    notification: N,
) {
    match shared.notifications.claim(&subject, &status).await {
        Ok(true) => {}
        Ok(false) => {
            whish_core::metrics::callback(kind_of(&subject), "duplicate");
            return;
        }
        Err(e) => {
            tracing::warn!(%subject, %status, error = %e, "the notification record cannot be read");
            return;
        }
    }
    run_claimed(shared, subject, status, handler, notification).await;
}

/// The `kind` label of a notification's subject.
pub(crate) fn kind_of(subject: &str) -> &'static str {
    if subject.starts_with("transfer:") {
        "transfer"
    } else {
        "collect"
    }
}

pub(crate) async fn run_claimed<N: Send + 'static>(
    shared: &Shared,
    subject: String,
    status: String,
    handler: DynHandler<N>,
    notification: N,
) {
    // In a task of its own, so that a handler that panics is seen (not a task that vanished
    // with its claim held for the whole claim window) and its claim released at once.
    let running = tokio::spawn(handler.handle(notification));
    let abort = running.abort_handle();
    let outcome = tokio::time::timeout(shared.handler_timeout, running).await;
    let kind = kind_of(&subject);
    whish_core::metrics::callback(
        kind,
        if matches!(outcome, Ok(Ok(Ok(())))) {
            "handled"
        } else {
            "failed"
        },
    );
    let done = match outcome {
        Ok(Ok(Ok(()))) => shared.notifications.complete(&subject, &status).await,
        Ok(Ok(Err(e))) => {
            tracing::warn!(%subject, %status, error = %e, "the handler failed; handed on again at the next sighting");
            shared.notifications.release(&subject, &status).await
        }
        Ok(Err(joined)) => {
            tracing::error!(%subject, %status, panicked = joined.is_panic(), "the handler panicked; handed on again at the next sighting");
            shared.notifications.release(&subject, &status).await
        }
        Err(_) => {
            abort.abort();
            tracing::warn!(%subject, %status, "the handler ran out of time; handed on again at the next sighting");
            shared.notifications.release(&subject, &status).await
        }
    };
    if let Err(e) = done {
        tracing::warn!(%subject, %status, error = %e, "the notification record cannot be written");
    }
}

/// The examples of this crate's README, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;
