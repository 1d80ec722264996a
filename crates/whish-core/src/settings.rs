//! The settings every client shares ([`ClientSettings`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::header::{ACCEPT, HeaderMap, HeaderName, HeaderValue, USER_AGENT};
use secrecy::{ExposeSecret, SecretString};

use crate::address::{BaseUrl, CallbackAddresses};
use crate::error::SetupError;
use crate::request::Policy;
use crate::retry::{RetryPolicy, Timeouts};
use crate::transport::Transport;
use crate::user_agent::UserAgent;

/// The default cap on a reply body: 64 MiB. The largest documented reply, a 100 000-line
/// statement, is about 17 MB.
pub const DEFAULT_MAX_REPLY_BYTES: usize = 64 * 1024 * 1024;

type Customize = Arc<dyn Fn(reqwest::ClientBuilder) -> reqwest::ClientBuilder + Send + Sync>;

/// Where requests go out.
#[derive(Clone, Default)]
enum ProxySetting {
    /// `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY` from the environment, as reqwest
    /// reads them.
    #[default]
    FromEnvironment,
    /// Every request through this proxy (its URL may carry credentials: kept secret).
    All(SecretString),
    /// Straight to the service, whatever the environment says.
    None,
}

/// The settings every client shares, in one builder: base URL, retry and timeout policy,
/// User-Agent, local callback addresses (sandbox only), and the HTTP settings (proxy, extra root
/// certificates, pool, reply size cap, or your own `reqwest::ClientBuilder`).
///
/// Each service builder wraps a [`ClientSettings`] and adds its own credentials:
///
/// ```
/// use std::time::Duration;
/// use whish_core::{ClientSettings, Policy, UserAgent};
///
/// let ua: UserAgent = "MyShop/1.0 (https://shop.example.com; dev@shop.example.com)".parse()?;
/// let settings = ClientSettings::new("https://collect.example.com/api")
///     .user_agent(ua)
///     .policy(Policy::default())
///     // The collect refund accepts only registered source addresses: leave through a
///     // fixed-egress proxy.
///     .proxy("http://egress.internal:3128")
///     .pool_idle_timeout(Duration::from_secs(30));
/// # let _ = settings;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Whatever you set, three rules hold: no redirect is followed (it would carry the credential
/// headers to another host), plain `http://` is refused except to loopback, and no reply body is
/// read past [`max_reply_bytes`](ClientSettings::max_reply_bytes).
#[derive(Clone)]
pub struct ClientSettings {
    base_url: String,
    policy: Policy,
    user_agent: Option<UserAgent>,
    callbacks: CallbackAddresses,
    proxy: ProxySetting,
    root_certificates: Vec<Vec<u8>>,
    pool_idle_timeout: Option<Duration>,
    pool_max_idle_per_host: Option<usize>,
    tcp_keepalive: Option<Duration>,
    max_reply_bytes: usize,
    retry_budget: crate::retry::RetryBudget,
    interceptors: Vec<Arc<dyn crate::intercept::Interceptor>>,
    customize: Option<Customize>,
}

impl fmt::Debug for ClientSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let proxy = match &self.proxy {
            ProxySetting::FromEnvironment => "from environment",
            ProxySetting::All(_) => "set (redacted)",
            ProxySetting::None => "none",
        };
        f.debug_struct("ClientSettings")
            .field("base_url", &self.base_url)
            .field("policy", &self.policy)
            .field("user_agent", &self.user_agent)
            .field("callbacks", &self.callbacks)
            .field("proxy", &proxy)
            .field("root_certificates", &self.root_certificates.len())
            .field("max_reply_bytes", &self.max_reply_bytes)
            .field("interceptors", &self.interceptors.len())
            .field("customized", &self.customize.is_some())
            .finish_non_exhaustive()
    }
}

impl From<&str> for ClientSettings {
    fn from(base_url: &str) -> Self {
        ClientSettings::new(base_url)
    }
}

impl From<String> for ClientSettings {
    fn from(base_url: String) -> Self {
        ClientSettings::new(base_url)
    }
}

impl ClientSettings {
    /// Settings for a service at `base_url`: `https://`, or `http://` to a loopback host (the
    /// sandbox). Checked when the client is built, as the setting `base_url`.
    pub fn new(base_url: impl Into<String>) -> ClientSettings {
        ClientSettings {
            base_url: base_url.into(),
            policy: Policy::default(),
            user_agent: None,
            callbacks: CallbackAddresses::PublicOnly,
            proxy: ProxySetting::FromEnvironment,
            root_certificates: Vec::new(),
            pool_idle_timeout: None,
            pool_max_idle_per_host: None,
            tcp_keepalive: None,
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
            retry_budget: crate::retry::RetryBudget::default(),
            interceptors: Vec::new(),
            customize: None,
        }
    }

    /// Retry and timeout settings of every call (a call may override them with the client's
    /// `with_options`).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// The budget the client's resends are paid from (default [`RetryBudget::default`]: 500
    /// tokens, 5 a resend, 10 after a timeout, 1 back per call that succeeds);
    /// [`RetryBudget::UNLIMITED`] turns it off. Shared by every call of the client built from
    /// these settings and by its clones.
    ///
    /// [`RetryBudget::default`]: crate::retry::RetryBudget
    /// [`RetryBudget::UNLIMITED`]: crate::retry::RetryBudget::UNLIMITED
    pub fn retry_budget(mut self, budget: crate::retry::RetryBudget) -> Self {
        self.retry_budget = budget;
        self
    }

    /// Run `interceptor` before and after every attempt of the client's calls (after the ones
    /// added before it). See [`crate::intercept`]: it may add headers and observe, never change
    /// the SDK's rules.
    pub fn interceptor(mut self, interceptor: Arc<dyn crate::intercept::Interceptor>) -> Self {
        self.interceptors.push(interceptor);
        self
    }

    /// Resends of every call.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.policy.retry = retry;
        self
    }

    /// Connect and per-attempt timeouts.
    pub fn timeouts(mut self, timeouts: Timeouts) -> Self {
        self.policy.timeouts = timeouts;
        self
    }

    /// The `User-Agent` (`AppName/version (website; contact-email)`): required by the collect
    /// and top-up services, optional for money transfer and locations.
    pub fn user_agent(mut self, user_agent: UserAgent) -> Self {
        self.user_agent = Some(user_agent);
        self
    }

    /// Accept loopback or private callback and redirect addresses (a listener on this machine).
    /// Only for the local sandbox: building refuses it unless the base URL is loopback, and the
    /// real services cannot reach such addresses.
    pub fn allow_local_callbacks(mut self) -> Self {
        self.callbacks = CallbackAddresses::AllowLocal;
        self
    }

    /// Send every request through this proxy (`http://host:port`, or `https://`; it may carry
    /// `user:password@`, which is kept secret). By default the `HTTPS_PROXY`, `ALL_PROXY` and
    /// `NO_PROXY` environment variables are honoured.
    pub fn proxy(mut self, url: impl Into<String>) -> Self {
        self.proxy = ProxySetting::All(SecretString::from(url.into()));
        self
    }

    /// Connect straight to the service, ignoring proxy environment variables.
    pub fn no_proxy(mut self) -> Self {
        self.proxy = ProxySetting::None;
        self
    }

    /// Trust this root certificate (PEM, one or several) besides the built-in roots: for a
    /// TLS-inspecting egress proxy or a private test server.
    pub fn add_root_certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificates.push(pem.into());
        self
    }

    /// How long an idle pooled connection is kept.
    pub fn pool_idle_timeout(mut self, timeout: Duration) -> Self {
        self.pool_idle_timeout = Some(timeout);
        self
    }

    /// How many idle connections per host the pool keeps.
    pub fn pool_max_idle_per_host(mut self, max: usize) -> Self {
        self.pool_max_idle_per_host = Some(max);
        self
    }

    /// TCP keep-alive on every connection.
    pub fn tcp_keepalive(mut self, interval: Duration) -> Self {
        self.tcp_keepalive = Some(interval);
        self
    }

    /// The largest reply body read, in bytes ([`DEFAULT_MAX_REPLY_BYTES`] by default; at least
    /// 1 KiB, a smaller value is raised to it). A larger reply stops reading there and is a
    /// transport error whose outcome is unknown.
    pub fn max_reply_bytes(mut self, max: usize) -> Self {
        self.max_reply_bytes = max.max(1024);
        self
    }

    /// Adjust the `reqwest::ClientBuilder` before the client is built (local address, DNS
    /// overrides, HTTP/1 tuning, ...). The SDK's rules are applied after your changes, so they
    /// still hold: no redirects, HTTPS only outside loopback, the connect timeout of the policy,
    /// and the reply cap.
    pub fn http_client(
        mut self,
        customize: impl Fn(reqwest::ClientBuilder) -> reqwest::ClientBuilder + Send + Sync + 'static,
    ) -> Self {
        self.customize = Some(Arc::new(customize));
        self
    }

    /// The base URL as given.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The User-Agent, when set.
    pub fn user_agent_value(&self) -> Option<&UserAgent> {
        self.user_agent.as_ref()
    }

    /// Build the transport of `service` with the service's own headers. The service builders
    /// call this; errors name the setting (`base_url`, `proxy`, or the header's name).
    ///
    /// # Errors
    ///
    /// A `SetupError` when a required setting is missing or a setting is invalid (the base URL, a
    /// credential, `https://` with no TLS stack built in, local callbacks with a base URL that is
    /// not loopback).
    #[doc(hidden)]
    pub fn build_transport(
        self,
        service: &'static str,
        headers: ServiceHeaders,
    ) -> Result<Transport, SetupError> {
        if let Some(e) = headers.error {
            return Err(e);
        }
        let base = BaseUrl::parse(&self.base_url, "base_url")?;
        let callbacks = self.callbacks.for_base(&base, "allow_local_callbacks")?;
        let mut all = HeaderMap::new();
        all.insert(ACCEPT, HeaderValue::from_static("application/json"));
        all.extend(headers.headers);
        if let Some(ua) = &self.user_agent {
            let v = HeaderValue::from_str(&ua.to_string()).map_err(|_| {
                SetupError::invalid("user_agent", "holds characters not allowed in a header")
            })?;
            all.insert(USER_AGENT, v);
        }
        // With rustls and ring, make ring the process default when nothing is installed yet, so
        // that a reqwest client of the program's own built after this one does not panic (see
        // `crate::tls`).
        #[cfg(feature = "rustls-ring")]
        if crate::tls::backend() == Some("rustls-ring") {
            let _ = crate::tls::install_default_provider();
        }
        // The TLS stack first, so that your own `http_client` changes can still replace it.
        let mut b = crate::tls::configure(
            reqwest::Client::builder(),
            &self.root_certificates,
            !base.is_loopback() || base.as_str().starts_with("https:"),
        )?;
        if let Some(customize) = &self.customize {
            b = customize(b);
        }
        b = match &self.proxy {
            ProxySetting::FromEnvironment => b,
            ProxySetting::None => b.no_proxy(),
            ProxySetting::All(url) => {
                let proxy = reqwest::Proxy::all(url.expose_secret()).map_err(|_| {
                    // The reqwest error would repeat the URL, which may hold a password.
                    SetupError::invalid("proxy", "is not a proxy URL")
                })?;
                b.proxy(proxy)
            }
        };
        if let Some(t) = self.pool_idle_timeout {
            b = b.pool_idle_timeout(t);
        }
        if let Some(n) = self.pool_max_idle_per_host {
            b = b.pool_max_idle_per_host(n);
        }
        if let Some(t) = self.tcp_keepalive {
            b = b.tcp_keepalive(t);
        }
        // The SDK's rules, last, so nothing above undoes them.
        let client = b
            .connect_timeout(self.policy.timeouts.connect)
            .redirect(reqwest::redirect::Policy::none())
            .https_only(!base.is_loopback())
            .build()
            .map_err(|e| SetupError::invalid("http_client", "could not be built").with_source(e))?;
        Ok(Transport {
            service,
            base,
            headers: all,
            policy: self.policy,
            client,
            callbacks,
            max_reply_bytes: self.max_reply_bytes,
            budget: Arc::new(crate::retry::Bucket::new(self.retry_budget)),
            interceptors: self.interceptors.into(),
            dynamic: headers.dynamic.into(),
            preferences: headers.preferences.into(),
            joined: Arc::default(),
        })
    }
}

/// The headers a service sends on every request (its credentials), collected with the first
/// error, which names the setting.
#[derive(Default)]
pub struct ServiceHeaders {
    pub(crate) headers: HeaderMap,
    pub(crate) dynamic: Vec<crate::transport::DynamicHeader>,
    /// The headers that say how to answer, not which account asks: left out of the account's
    /// fingerprint ([`Transport::target`](crate::transport::Transport::target)).
    pub(crate) preferences: Vec<HeaderName>,
    pub(crate) error: Option<SetupError>,
}

impl fmt::Debug for ServiceHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.keys().map(HeaderName::as_str).collect();
        f.debug_struct("ServiceHeaders")
            .field("names", &names)
            .finish_non_exhaustive()
    }
}

impl ServiceHeaders {
    /// No headers yet.
    pub fn new() -> ServiceHeaders {
        ServiceHeaders::default()
    }

    /// A plain header from the setting `setting`, required and not blank.
    pub fn required(mut self, header: &'static str, setting: &str, value: Option<&str>) -> Self {
        match value.map(str::trim).filter(|v| !v.is_empty()) {
            None => self.fail(SetupError::missing(setting)),
            Some(v) => match HeaderValue::from_str(v) {
                Ok(v) => {
                    self.headers.insert(HeaderName::from_static(header), v);
                }
                Err(_) => self.fail(SetupError::invalid(
                    setting,
                    "holds characters not allowed in a header",
                )),
            },
        }
        self
    }

    /// An optional plain header.
    pub fn optional(self, header: &'static str, setting: &str, value: Option<&str>) -> Self {
        match value {
            Some(_) => self.required(header, setting, value),
            None => self,
        }
    }

    /// An optional plain header that says how to answer, not which account asks (a display
    /// language): sent like [`optional`](Self::optional), but not part of the account a journal
    /// records beside each request, so that an entry recorded with it is still recovered
    /// without it.
    pub fn preference(mut self, header: &'static str, setting: &str, value: Option<&str>) -> Self {
        if value.is_some() {
            self.preferences.push(HeaderName::from_static(header));
        }
        self.optional(header, setting, value)
    }

    /// A secret header from the setting `setting`, required and not blank. It is marked
    /// sensitive and never shows in `Debug`, errors or tracing.
    pub fn secret(
        mut self,
        header: &'static str,
        setting: &str,
        value: Option<&SecretString>,
    ) -> Self {
        let Some(value) = value.filter(|v| !v.expose_secret().trim().is_empty()) else {
            self.fail(SetupError::missing(setting));
            return self;
        };
        match HeaderValue::from_str(value.expose_secret()) {
            Ok(mut v) => {
                v.set_sensitive(true);
                self.headers.insert(HeaderName::from_static(header), v);
            }
            Err(_) => self.fail(SetupError::invalid(
                setting,
                "holds characters not allowed in a header",
            )),
        }
        self
    }

    /// A secret header whose value is read from `source` before every attempt (see
    /// [`crate::credentials`]): a rotated value takes effect on the next attempt. The source is
    /// read once now, so that a missing value fails the build.
    pub fn secret_from(
        mut self,
        header: &'static str,
        setting: &str,
        source: Arc<dyn crate::credentials::SecretSource>,
    ) -> Self {
        match source.current() {
            Err(why) => self.fail(SetupError::invalid(setting, why)),
            Ok(value) => match crate::credentials::header_value(&value) {
                Err(why) => self.fail(SetupError::invalid(setting, why)),
                Ok(_) => {
                    let name = HeaderName::from_static(header);
                    self.headers.remove(&name);
                    self.dynamic.push(crate::transport::DynamicHeader {
                        name,
                        setting: setting.to_owned(),
                        source,
                    });
                }
            },
        }
        self
    }

    /// A secret header: from `source` when one is given, else the fixed `value`.
    pub fn secret_or_source(
        self,
        header: &'static str,
        setting: &str,
        value: Option<&SecretString>,
        source: Option<Arc<dyn crate::credentials::SecretSource>>,
    ) -> Self {
        match source {
            Some(source) => self.secret_from(header, setting, source),
            None => self.secret(header, setting, value),
        }
    }

    /// Fail unless `present` (a setting the service requires, such as `user_agent`).
    pub fn require(mut self, setting: &str, present: bool) -> Self {
        if !present {
            self.fail(SetupError::missing(setting));
        }
        self
    }

    fn fail(&mut self, e: SetupError) {
        self.error.get_or_insert(e);
    }
}
