//! # whish-sandbox
//!
//! A local, stateful simulator of the three whish services, for integration tests, demos and
//! people trying the SDK: money transfer with the location lookups, hosted collect with its
//! payment page, and international top-up. One loopback listener serves all three, under
//! `/transfer/api` (so transfer URLs hold the doubled `/api/api/`, as in the real sandbox),
//! `/collect` and `/topup`, plus the control API under `/_sandbox/`.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! let sandbox = whish_sandbox::Sandbox::start().await?;
//! println!("{}", sandbox.env_exports()); // WHISH_TRANSFER_BASE_URL=..., credentials, ...
//! // ... drive the SDK clients against it, then make the world move:
//! // sandbox.collect_cash("7700007919").await  (the receiver collects; the callback is POSTed)
//! sandbox.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! What it keeps, as the specifications describe it:
//!
//! - **Money transfer**: a price list behind fees and send (with `deductFees`), balances per
//!   currency, per-transfer and daily limits, the send checks (English names, `dateBirth`, the
//!   exact reason and sourceOfFunds strings, missing sender or receiver, currency, countries),
//!   Request-id idempotency (`transfer.already.done`), SENT to RECEIVED when
//!   [`Sandbox::collect_cash`] says so (the signed callback is POSTed to `callbackUrl`; to a
//!   loopback or private address only when lenient, as the real service cannot reach one), cancel rules, status by any identifier, the activity event log and a statement
//!   that keeps `balance = previous + debit - credit`. Mobile wallet: see [`WalletPhones`].
//! - **Hosted collect**: a `collectUrl` to a small HTML page; the [`TestPayer`] pays it (success
//!   GET callback, redirect), a wrong code fires the failure callback and the link stays pending,
//!   links expire as failed, refund once after success, every externalId replays its recorded
//!   reply with `retrieved: true`. Strict mode answers HTTP 403 for non-public addresses.
//! - **Top-up**: providers with fixed catalogues (`etisalat-ae`, `du-ae`, `gift-voucher`), the
//!   exact-amount check, externalId replay, balance and void balance, PINs for vouchers.
//! - **Faults** per endpoint ([`Fault`]): drop the request, drop the reply after applying it,
//!   delay, answer Pending, stall, a proxy's page, a chosen failure code.
//!
//! What the specifications leave out, the sandbox decides and says so: the callback signature
//! scheme ([`callback`]), the top-up authentication code (`external.invalid.request`), the code
//! of an unknown reason string (`transfer.reason_empty`), of a refund of an unpaid link (`fail`)
//! and of a collect amount below the minimum (`400`). See `docs/sandbox.md`.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod callback;
mod clock;
mod collect;
mod config;
mod control;
mod endpoint;
mod envelope;
mod fault;
mod journal;
mod pages;
mod server;
mod service;
mod topup;
mod transfer;
mod values;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::routing::get;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use callback::CallbackDelivery;
pub use config::{
    CollectCredentials, FeeBracket, Limits, SandboxBuilder, TestPayer, TopupCredentials,
    TransferCredentials, WalletPhones,
};
pub use control::{
    CashCollected, ControlError, LinkAttempt, PaymentRecord, SaleRecord, TransferRecord,
};
pub use endpoint::Endpoint;
pub use fault::Fault;
pub use journal::{JOURNAL_MAX_BODY_BYTES, JOURNAL_MAX_REQUESTS, ReceivedRequest};

use clock::Clock;

use config::Settings;

/// Everything the three services hold.
#[derive(Debug)]
pub(crate) struct World {
    pub transfer: transfer::state::TransferWorld,
    pub collect: collect::state::CollectWorld,
    pub topup: topup::TopupWorld,
}

impl World {
    fn new(s: &Settings, clock: &Clock) -> World {
        World {
            transfer: transfer::state::TransferWorld::new(s, clock.now()),
            collect: collect::state::CollectWorld::new(s),
            topup: topup::TopupWorld::new(s),
        }
    }
}

/// State shared by the listener's tasks and the handle.
pub(crate) struct Shared {
    pub settings: Settings,
    pub clock: Clock,
    /// `http://127.0.0.1:PORT`
    pub root: String,
    pub world: Mutex<World>,
    /// Per endpoint, faults still to apply and how many times each.
    pub faults: Mutex<HashMap<Endpoint, VecDeque<(Fault, u64)>>>,
    pub journal: Mutex<journal::Journal>,
    pub deliveries: Mutex<Vec<CallbackDelivery>>,
    pub http: reqwest::Client,
}

/// A running sandbox. Dropping it leaves the listener running until the runtime stops; call
/// [`shutdown`](Self::shutdown) for a clean stop.
pub struct Sandbox {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Start a sandbox with the default settings on a free port of 127.0.0.1.
    ///
    /// # Examples
    ///
    /// The settings a client (or the `whish` command) needs to reach it, then the state a test
    /// reads back:
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// let sb = whish_sandbox::Sandbox::start().await?;
    /// println!("{}", sb.env_exports()); // export WHISH_TRANSFER_BASE_URL='http://127.0.0.1:...'
    /// // ... run your code against it, then:
    /// for t in sb.transfers() {
    ///     println!("{} paid under Request-id {}", t.transfer_id, t.request_id);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// The I/O error when the listening socket cannot be bound.
    pub async fn start() -> std::io::Result<Sandbox> {
        Sandbox::builder().start().await
    }

    /// Choose the port, credentials, clock, price list, balances, limits, strict mode, link
    /// expiry or callback key first.
    pub fn builder() -> SandboxBuilder {
        SandboxBuilder::default()
    }

    pub(crate) async fn start_with(settings: Settings) -> std::io::Result<Sandbox> {
        let listener = tokio::net::TcpListener::bind((settings.bind, settings.port)).await?;
        let addr = listener.local_addr()?;
        let clock = match settings.start_time {
            Some(t) => Clock::fixed(t),
            None => Clock::default(),
        };
        let world = World::new(&settings, &clock);
        let shared = Arc::new(Shared {
            root: format!("http://{addr}"),
            world: Mutex::new(world),
            settings,
            clock,
            faults: Mutex::default(),
            journal: Mutex::default(),
            deliveries: Mutex::default(),
            http: callback::http_client(),
        });
        let app = Router::new()
            .route("/collect/pay/{token}", get(pages::show).post(pages::submit))
            .nest("/_sandbox", control::guarded(shared.clone()))
            .fallback(service::dispatch)
            .layer(axum::middleware::from_fn_with_state(
                shared.clone(),
                server::request_deadline,
            ))
            .with_state(shared.clone());
        let (stop, stopped) = watch::channel(false);
        let header_timeout = shared.settings.header_read_timeout;
        let task = tokio::spawn(server::serve(listener, app, header_timeout, stopped));
        tracing::info!(%addr, "whish sandbox listening");
        Ok(Sandbox {
            shared,
            addr,
            stop,
            task,
        })
    }

    /// Stop listening and close every connection.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }

    /// The listening address (127.0.0.1 and the port).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`: the control API is under `/_sandbox/`.
    pub fn root_url(&self) -> &str {
        &self.shared.root
    }

    /// The money-transfer and locations base URL. It ends in `/api`, like the real sandbox's, so
    /// endpoint URLs hold `/api/api/`.
    pub fn transfer_base_url(&self) -> String {
        format!("{}{}", self.shared.root, endpoint::TRANSFER_PREFIX)
    }

    /// The hosted-collect base URL.
    pub fn collect_base_url(&self) -> String {
        format!("{}{}", self.shared.root, endpoint::COLLECT_PREFIX)
    }

    /// The top-up base URL.
    pub fn topup_base_url(&self) -> String {
        format!("{}{}", self.shared.root, endpoint::TOPUP_PREFIX)
    }

    /// The transfer and locations credentials the sandbox accepts.
    pub fn transfer_credentials(&self) -> &TransferCredentials {
        &self.shared.settings.transfer
    }

    /// The collect credentials the sandbox accepts.
    pub fn collect_credentials(&self) -> &CollectCredentials {
        &self.shared.settings.collect
    }

    /// The top-up credentials the sandbox accepts.
    pub fn topup_credentials(&self) -> &TopupCredentials {
        &self.shared.settings.topup
    }

    /// The wallet phones that decide a mobile-wallet send.
    pub fn wallet_phones(&self) -> &WalletPhones {
        &self.shared.settings.wallets
    }

    /// The phone and code that pay a hosted link.
    pub fn test_payer(&self) -> &TestPayer {
        &self.shared.settings.payer
    }

    /// The key of the transfer-callback signature (see [`callback`]).
    pub fn callback_key(&self) -> &[u8] {
        &self.shared.settings.callback_key
    }

    /// True when `signature` is this sandbox's signature of a transfer callback.
    pub fn verify_signature(&self, timestamp: i64, body: &[u8], signature: &[u8]) -> bool {
        callback::verify_signature(self.callback_key(), timestamp, body, signature)
    }

    /// The settings as shell `export` lines of [`env_vars`](Self::env_vars), each value quoted
    /// for a POSIX shell.
    pub fn env_exports(&self) -> String {
        self.env_vars()
            .iter()
            .map(|(k, v)| format!("export {k}='{}'\n", v.replace('\'', "'\\''")))
            .collect()
    }

    /// The settings as `(variable, value)` pairs, with the variable names the `whish` command
    /// reads, and the transfer callbacks' signing key (`WHISH_SANDBOX_CALLBACK_KEY`): what a
    /// child process is given to reach this sandbox. They hold the sandbox's own test
    /// credentials, never real ones.
    pub fn env_vars(&self) -> Vec<(String, String)> {
        let t = self.transfer_credentials();
        let c = self.collect_credentials();
        let u = self.topup_credentials();
        vec![
            ("WHISH_TRANSFER_BASE_URL", self.transfer_base_url()),
            ("WHISH_TRANSFER_USERNAME", t.username.clone()),
            ("WHISH_TRANSFER_KEY", t.key.clone()),
            ("WHISH_COLLECT_BASE_URL", self.collect_base_url()),
            ("WHISH_COLLECT_CHANNEL", c.channel.clone()),
            ("WHISH_COLLECT_SECRET", c.secret.clone()),
            ("WHISH_COLLECT_WEBSITE_URL", c.website_url.clone()),
            ("WHISH_TOPUP_BASE_URL", self.topup_base_url()),
            ("WHISH_TOPUP_SESSION_ID", u.session_id.clone()),
            ("WHISH_TOPUP_TOKEN", u.token.clone()),
            (
                "WHISH_USER_AGENT",
                "WhishSandbox/0.1 (https://sandbox.example.com; dev@example.com)".to_owned(),
            ),
            // The key the sandbox signs transfer callbacks with (its own scheme, see
            // `callback`): what a receiver under test verifies them with.
            (
                "WHISH_SANDBOX_CALLBACK_KEY",
                String::from_utf8_lossy(self.callback_key()).into_owned(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }
}

/// The examples of this crate's README, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;
