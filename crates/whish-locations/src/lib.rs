//! # whish-locations
//!
//! The read-only lookups of the places where a receiver can collect cash: governorates with
//! their districts, and shops (operator branches and partner agents), optionally narrowed to a
//! governorate and/or district. Same credentials and headers as the money-transfer service.
//!
//! Eight governorates with district ids 1 to 26 exist at the time of writing; pull the live list
//! instead of hard-coding it.
//!
//! ```no_run
//! # async fn run() -> Result<(), whish_locations::Error> {
//! use whish_core::SecretString;
//! use whish_locations::{LocationsClient, ShopFilter};
//!
//! let client = LocationsClient::builder("https://transfer.example.com/api", "user", SecretString::from("key"))
//!     .build()?;
//! for g in client.governorates().await? {
//!     println!("{} ({} districts)", g.label, g.districts.len());
//! }
//! let shops = client.shops(&ShopFilter::default().governorate_id(2)).await?;
//! # let _ = shops;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod code;
mod model;

use whish_core::retry::Resend;
use whish_core::transport::{CallOptions, Method, Policy, Request, Transport};
use whish_core::{BaseUrl, RequestId, SecretString, UserAgent, ValidationError, ValidationKind};

pub use code::LocationsCode;
pub use model::{District, Governorate, Shop, ShopType};

/// The error type of this service's calls.
pub type Error = whish_core::Error<LocationsCode>;

/// Builds a [`LocationsClient`].
#[derive(Debug)]
pub struct LocationsClientBuilder {
    base_url: String,
    username: String,
    key: SecretString,
    user_agent: Option<UserAgent>,
    policy: Policy,
}

impl LocationsClientBuilder {
    /// Send a `User-Agent`.
    pub fn user_agent(mut self, ua: UserAgent) -> Self {
        self.user_agent = Some(ua);
        self
    }
    /// Retry and timeout settings.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }
    /// Check the settings and build the client. Nothing is sent.
    pub fn build(self) -> Result<LocationsClient, ValidationError> {
        let base = BaseUrl::parse(&self.base_url, "WHISH_TRANSFER_BASE_URL")?;
        if self.username.trim().is_empty() {
            return Err(ValidationError::new(
                "WHISH_TRANSFER_USERNAME",
                ValidationKind::Missing,
            ));
        }
        let mut t = Transport::builder("locations", base)
            .header("username", self.username.trim())
            .secret_header("key", &self.key)
            .policy(self.policy);
        if let Some(ua) = &self.user_agent {
            t = t.user_agent(ua);
        }
        Ok(LocationsClient {
            transport: t.build()?,
            options: CallOptions::default(),
        })
    }
}

/// Narrows the shops lookup. Both unset: all shops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShopFilter {
    governorate_id: Option<i64>,
    district_id: Option<i64>,
}

impl ShopFilter {
    /// Only shops of this governorate.
    pub fn governorate_id(mut self, id: i64) -> Self {
        self.governorate_id = Some(id);
        self
    }
    /// Only shops of this district.
    pub fn district_id(mut self, id: i64) -> Self {
        self.district_id = Some(id);
        self
    }
}

/// The locations client. Cheap to clone.
#[derive(Debug, Clone)]
pub struct LocationsClient {
    transport: Transport,
    options: CallOptions,
}

impl LocationsClient {
    /// Start building a client with the money-transfer base URL and credentials.
    pub fn builder(
        base_url: impl Into<String>,
        username: impl Into<String>,
        key: SecretString,
    ) -> LocationsClientBuilder {
        LocationsClientBuilder {
            base_url: base_url.into(),
            username: username.into(),
            key,
            user_agent: None,
            policy: Policy::default(),
        }
    }

    /// A client whose calls use these retry and timeout overrides.
    pub fn with_options(&self, options: CallOptions) -> LocationsClient {
        LocationsClient {
            transport: self.transport.clone(),
            options,
        }
    }

    /// Every governorate with its districts (an empty list when there is none).
    pub async fn governorates(&self) -> Result<Vec<Governorate>, Error> {
        let req = Request::new("locations.governorates", Method::GET, "/api/governorates")
            .request_id(RequestId::generate())
            .resend(Resend::Read)
            .options(self.options);
        Ok(self
            .transport
            .call::<Vec<Governorate>, LocationsCode>(req)
            .await?
            .data
            .unwrap_or_default())
    }

    /// The shops, optionally narrowed (an empty list when nothing matches).
    pub async fn shops(&self, filter: &ShopFilter) -> Result<Vec<Shop>, Error> {
        for (field, v) in [
            ("governorateId", filter.governorate_id),
            ("districtId", filter.district_id),
        ] {
            if v.is_some_and(|v| v <= 0) {
                return Err(ValidationError::invalid(field, "must be a positive id").into());
            }
        }
        let mut req = Request::new("locations.shops", Method::GET, "/api/shops")
            .request_id(RequestId::generate())
            .resend(Resend::Read)
            .options(self.options);
        if let Some(g) = filter.governorate_id {
            req = req.query("governorateId", g.to_string());
        }
        if let Some(d) = filter.district_id {
            req = req.query("districtId", d.to_string());
        }
        Ok(self
            .transport
            .call::<Vec<Shop>, LocationsCode>(req)
            .await?
            .data
            .unwrap_or_default())
    }
}

/// The examples of `docs/locations.md`, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/locations.md")]
pub struct GuideDoctests;
