//! Sandbox settings: credentials, price list, balances, limits, and the test values a person or a
//! test uses to drive the simulated world.

use std::fmt;
use std::time::Duration;

use rust_decimal::Decimal;
use time::OffsetDateTime;

/// Credentials of the money-transfer and locations services.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransferCredentials {
    /// The `username` header.
    pub username: String,
    /// The `key` header.
    pub key: String,
}

/// Credentials of the hosted-collect service.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CollectCredentials {
    /// The `channel` header.
    pub channel: String,
    /// The `secret` header.
    pub secret: String,
    /// The `websiteUrl` header, exactly as issued.
    pub website_url: String,
}

/// Credentials of the top-up service.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TopupCredentials {
    /// The `sessionId` header.
    pub session_id: String,
    /// The `token` header.
    pub token: String,
}

impl fmt::Debug for TransferCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransferCredentials")
            .field("username", &self.username)
            .field("key", &"<redacted>")
            .finish()
    }
}

impl fmt::Debug for CollectCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CollectCredentials")
            .field("channel", &self.channel)
            .field("secret", &"<redacted>")
            .field("website_url", &self.website_url)
            .finish()
    }
}

impl fmt::Debug for TopupCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TopupCredentials { session_id: <redacted>, token: <redacted> }")
    }
}

/// One fee bracket of the transfer price list: amounts from `min` to `max` (inclusive) in
/// `currency` cost `fee`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FeeBracket {
    /// `USD` or `LBP`.
    pub currency: String,
    /// Smallest amount of the bracket.
    pub min: Decimal,
    /// Largest amount of the bracket.
    pub max: Decimal,
    /// The fee.
    pub fee: Decimal,
}

impl FeeBracket {
    /// A bracket.
    pub fn new(currency: &str, min: Decimal, max: Decimal, fee: Decimal) -> FeeBracket {
        FeeBracket {
            currency: currency.to_owned(),
            min,
            max,
            fee,
        }
    }
}

/// Per-transfer and daily sending limits of the account, per currency.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// `USD` or `LBP`.
    pub currency: String,
    /// Largest amount of one transfer.
    pub per_transfer: Decimal,
    /// Largest sum of the amounts sent in one day (UTC).
    pub daily: Decimal,
}

/// The mobile-wallet phones of the sandbox: what happens to a wallet send depends on the
/// receiver's phone. Any other phone fails with `receiver.svc.account.not.exists`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WalletPhones {
    /// Credited at once.
    pub credited: String,
    /// Fails with `receiver.svc.account.not.exists`.
    pub failing: String,
    /// Goes Pending (`code` 500) and stays so.
    pub pending: String,
}

/// The sandbox payer of the hosted page: this phone with this six-digit code pays a link.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TestPayer {
    /// The phone number to type.
    pub phone: String,
    /// The one-time code to type.
    pub code: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub port: u16,
    pub transfer: TransferCredentials,
    pub collect: CollectCredentials,
    pub topup: TopupCredentials,
    pub start_time: Option<OffsetDateTime>,
    pub price_list: Vec<FeeBracket>,
    pub limits: Vec<Limits>,
    pub transfer_balances: Vec<(String, Decimal)>,
    pub collect_balances: Vec<(String, Decimal)>,
    pub topup_balance: Decimal,
    pub topup_void_balance: Decimal,
    pub sending_countries: Vec<(i64, String, String)>,
    pub strict: bool,
    pub bind: std::net::IpAddr,
    pub link_expiry: Duration,
    pub callback_key: Vec<u8>,
    pub wallets: WalletPhones,
    pub payer: TestPayer,
    pub header_read_timeout: Duration,
    pub request_deadline: Duration,
}

fn d(n: i64) -> Decimal {
    Decimal::from(n)
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            port: 0,
            transfer: TransferCredentials {
                username: "sandbox-user".into(),
                key: "sandbox-transfer-key".into(),
            },
            collect: CollectCredentials {
                channel: "sandbox-channel".into(),
                secret: "sandbox-collect-secret".into(),
                website_url: "shop.example.com".into(),
            },
            topup: TopupCredentials {
                session_id: "sandbox-session".into(),
                token: "sandbox-topup-token".into(),
            },
            start_time: None,
            price_list: vec![
                FeeBracket::new("USD", d(1), d(100), d(5)),
                FeeBracket::new("USD", Decimal::new(10001, 2), d(1_000), d(10)),
                FeeBracket::new("USD", Decimal::new(100_001, 2), d(10_000), d(25)),
                FeeBracket::new("LBP", d(100_000), d(9_000_000), d(450_000)),
                FeeBracket::new("LBP", d(9_000_001), d(90_000_000), d(900_000)),
                FeeBracket::new("LBP", d(90_000_001), d(900_000_000), d(2_250_000)),
            ],
            limits: vec![
                Limits {
                    currency: "USD".into(),
                    per_transfer: d(7_500),
                    daily: d(20_000),
                },
                Limits {
                    currency: "LBP".into(),
                    per_transfer: d(670_000_000),
                    daily: d(1_790_000_000),
                },
            ],
            transfer_balances: vec![("USD".into(), d(50_000)), ("LBP".into(), d(5_000_000_000))],
            collect_balances: vec![("USD".into(), d(0)), ("LBP".into(), d(0))],
            topup_balance: d(500),
            topup_void_balance: Decimal::ZERO,
            sending_countries: vec![(1, "Lebanon".into(), "LB".into())],
            strict: true,
            bind: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            link_expiry: Duration::from_secs(15 * 60),
            callback_key: b"sandbox-callback-signing-key".to_vec(),
            wallets: WalletPhones {
                credited: "+96170000001".into(),
                failing: "+96170000002".into(),
                pending: "+96170000003".into(),
            },
            payer: TestPayer {
                phone: "+96171000000".into(),
                code: "123456".into(),
            },
            header_read_timeout: crate::server::HEADER_READ_TIMEOUT,
            request_deadline: crate::server::REQUEST_DEADLINE,
        }
    }
}

/// Builds a [`Sandbox`](crate::Sandbox). Every setting has a default; see each method.
#[derive(Debug, Clone, Default)]
pub struct SandboxBuilder {
    pub(crate) settings: Settings,
}

impl SandboxBuilder {
    /// Listen on this port of 127.0.0.1 (default 0: a free port).
    pub fn port(mut self, port: u16) -> Self {
        self.settings.port = port;
        self
    }

    /// The transfer and locations credentials the sandbox accepts.
    pub fn transfer_credentials(mut self, username: &str, key: &str) -> Self {
        self.settings.transfer = TransferCredentials {
            username: username.into(),
            key: key.into(),
        };
        self
    }

    /// The collect credentials the sandbox accepts.
    pub fn collect_credentials(mut self, channel: &str, secret: &str, website_url: &str) -> Self {
        self.settings.collect = CollectCredentials {
            channel: channel.into(),
            secret: secret.into(),
            website_url: website_url.into(),
        };
        self
    }

    /// The top-up credentials the sandbox accepts.
    pub fn topup_credentials(mut self, session_id: &str, token: &str) -> Self {
        self.settings.topup = TopupCredentials {
            session_id: session_id.into(),
            token: token.into(),
        };
        self
    }

    /// Freeze the clock at this instant; it then moves only by
    /// [`Sandbox::advance_clock`](crate::Sandbox::advance_clock). Default: the system clock.
    pub fn clock(mut self, at: OffsetDateTime) -> Self {
        self.settings.start_time = Some(at);
        self
    }

    /// Replace the transfer price list. An amount outside every bracket of its currency answers
    /// `transfer.invalid_amount`.
    pub fn price_list(mut self, brackets: Vec<FeeBracket>) -> Self {
        self.settings.price_list = brackets;
        self
    }

    /// Set the per-transfer and daily limits of one currency.
    pub fn limits(mut self, currency: &str, per_transfer: Decimal, daily: Decimal) -> Self {
        self.settings.limits.retain(|l| l.currency != currency);
        self.settings.limits.push(Limits {
            currency: currency.into(),
            per_transfer,
            daily,
        });
        self
    }

    /// The opening transfer balance of one currency (a TOPUP line of the statement).
    pub fn transfer_balance(mut self, currency: &str, amount: Decimal) -> Self {
        set(&mut self.settings.transfer_balances, currency, amount);
        self
    }

    /// The opening collect (merchant) balance of one currency.
    pub fn collect_balance(mut self, currency: &str, amount: Decimal) -> Self {
        set(&mut self.settings.collect_balances, currency, amount);
        self
    }

    /// The opening top-up balance and void balance (the session's currency is USD).
    pub fn topup_balance(mut self, balance: Decimal, void_balance: Decimal) -> Self {
        self.settings.topup_balance = balance;
        self.settings.topup_void_balance = void_balance;
        self
    }

    /// Enable one more sending country (only Lebanon, id 1, by default).
    pub fn sending_country(mut self, id: i64, name: &str, iso_code: &str) -> Self {
        self.settings
            .sending_countries
            .push((id, name.into(), iso_code.into()));
        self
    }

    /// Lenient mode: accept loopback and non-public callback and redirect addresses, so that
    /// callbacks reach a listener on this machine (the demo, tests), with one log line saying
    /// the real service refuses them. By default the sandbox is as strict as production: a
    /// collect payment with such an address gets HTTP 403, and so does a transfer whose
    /// `callbackUrl` is one (a sandbox choice; see docs/sandbox.md).
    pub fn lenient(mut self, lenient: bool) -> Self {
        self.settings.strict = !lenient;
        self
    }

    /// Listen on this address instead of 127.0.0.1 (a container, another machine). The control
    /// API has no credentials: it then also answers a `Host` naming this address, so bind
    /// elsewhere only on a network you trust.
    pub fn bind(mut self, address: std::net::IpAddr) -> Self {
        self.settings.bind = address;
        self
    }

    /// The transfer credentials this builder issues (the defaults, unless changed).
    pub fn transfer_credentials_issued(&self) -> &TransferCredentials {
        &self.settings.transfer
    }

    /// The collect credentials this builder issues.
    pub fn collect_credentials_issued(&self) -> &CollectCredentials {
        &self.settings.collect
    }

    /// The top-up credentials this builder issues.
    pub fn topup_credentials_issued(&self) -> &TopupCredentials {
        &self.settings.topup
    }

    /// How long a client has to send a request's headers, and how long one request may take,
    /// body included (defaults 10 s and 60 s). A half-sent request is closed; a slow one gets 408.
    pub fn request_timeouts(mut self, headers: Duration, whole_request: Duration) -> Self {
        self.settings.header_read_timeout = headers;
        self.settings.request_deadline = whole_request;
        self
    }

    /// How long a hosted payment link stays payable (default 15 minutes of the sandbox clock).
    pub fn link_expiry(mut self, expiry: Duration) -> Self {
        self.settings.link_expiry = expiry;
        self
    }

    /// The key of the sandbox's transfer-callback signature (see [`crate::callback`]).
    pub fn callback_key(mut self, key: &[u8]) -> Self {
        self.settings.callback_key = key.to_vec();
        self
    }

    /// Start listening. See [`Sandbox::start`](crate::Sandbox::start).
    ///
    /// # Errors
    ///
    /// The I/O error when the listening socket cannot be bound.
    pub async fn start(self) -> std::io::Result<crate::Sandbox> {
        crate::Sandbox::start_with(self.settings).await
    }
}

fn set(list: &mut Vec<(String, Decimal)>, currency: &str, amount: Decimal) {
    list.retain(|(c, _)| c != currency);
    list.push((currency.to_owned(), amount));
}
