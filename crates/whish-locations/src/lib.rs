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
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use whish_core::SecretString;
//! use whish_locations::{LocationsClient, ShopFilter};
//!
//! let client = LocationsClient::builder("https://transfer.example.com/api")
//!     .username("user")
//!     .key(SecretString::from("key"))
//!     .build()?;
//! for g in client.governorates().await? {
//!     println!("{} ({} districts)", g.label, g.districts.len());
//! }
//! let shops = client.shops(&ShopFilter::default().governorate_id(2)).await?;
//! # let _ = shops;
//! # Ok(()) }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod code;
mod model;

use whish_core::CallOptions;
use whish_core::runtime::Resend;
use whish_core::runtime::{HeaderName, HeaderValue, Method, Request, Transport};
use whish_core::{
    ClientSettings, RequestId, SecretString, ServiceHeaders, SetupError, ValidationError,
};

pub use code::LocationsCode;
pub use model::{District, Governorate, Shop, ShopType};

/// The error type of this service's calls.
pub type Error = whish_core::Error<LocationsCode>;

/// Builds a [`LocationsClient`]: the shared [`ClientSettings`] plus the money-transfer account's
/// `username` and secret `key`.
#[derive(Debug)]
#[must_use = "a builder does nothing until build() is called"]
pub struct LocationsClientBuilder {
    settings: ClientSettings,
    username: Option<String>,
    key: Option<SecretString>,
}

impl LocationsClientBuilder {
    /// The account username (setting `username`).
    pub fn username(mut self, username: impl Into<String>) -> Self {
        self.username = Some(username.into());
        self
    }
    /// The secret API key (setting `key`).
    pub fn key(mut self, key: SecretString) -> Self {
        self.key = Some(key);
        self
    }
    /// Check the settings and build the client. Nothing is sent. An error names the setting.
    ///
    /// # Errors
    ///
    /// A `SetupError` when a required setting is missing or a setting is invalid (the base URL, a
    /// credential, `https://` with no TLS stack built in, local callbacks with a base URL that is
    /// not loopback).
    pub fn build(self) -> Result<LocationsClient, SetupError> {
        let headers = ServiceHeaders::new()
            .required("username", "username", self.username.as_deref())
            .secret("key", "key", self.key.as_ref());
        Ok(LocationsClient {
            transport: self.settings.build_transport("locations", headers)?,
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
    /// Start building a client with the money-transfer base URL (or [`ClientSettings`]); the
    /// credentials are the money-transfer account's.
    ///
    /// # Examples
    ///
    /// ```
    /// use whish_core::SecretString;
    /// use whish_locations::LocationsClient;
    /// let client = LocationsClient::builder("https://transfer.example.com")
    ///     .username("my-account")
    ///     .key(SecretString::from("my-key"))
    ///     .build()?;
    /// # let _ = client;
    /// # Ok::<(), whish_core::SetupError>(())
    /// ```
    pub fn builder(settings: impl Into<ClientSettings>) -> LocationsClientBuilder {
        LocationsClientBuilder {
            settings: settings.into(),
            username: None,
            key: None,
        }
    }

    /// A client whose calls use these retry and timeout overrides.
    pub fn with_options(&self, options: CallOptions) -> LocationsClient {
        LocationsClient {
            transport: self.transport.clone(),
            options,
        }
    }

    fn request(&self, endpoint: &'static str, path: &str) -> Request {
        let id = RequestId::generate();
        Request::new(endpoint, Method::GET, path)
            .header(
                HeaderName::from_static("request-id"),
                HeaderValue::from(id.get()),
            )
            .idempotency_key(id)
            .resend(Resend::Read)
            .options(self.options)
    }

    /// Every governorate with its districts (an empty list when there is none).
    ///
    /// # Errors
    ///
    /// A refusal (a documented code), Pending, a transport failure or a reply that cannot be read,
    /// as the service's `Error`; a read is resent after transient failures before it fails.
    pub async fn governorates(&self) -> Result<Vec<Governorate>, Error> {
        let req = self.request("locations.governorates", "/api/governorates");
        Ok(self
            .transport
            .call::<Vec<Governorate>, LocationsCode>(req)
            .await?
            .data
            .unwrap_or_default())
    }

    /// The shops, optionally narrowed (an empty list when nothing matches).
    ///
    /// # Errors
    ///
    /// A refusal (a documented code), Pending, a transport failure or a reply that cannot be read,
    /// as the service's `Error`; a read is resent after transient failures before it fails.
    pub async fn shops(&self, filter: &ShopFilter) -> Result<Vec<Shop>, Error> {
        for (field, v) in [
            ("governorateId", filter.governorate_id),
            ("districtId", filter.district_id),
        ] {
            if v.is_some_and(|v| v <= 0) {
                return Err(ValidationError::invalid(field, "must be a positive id").into());
            }
        }
        let mut req = self.request("locations.shops", "/api/shops");
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

/// The examples of this crate's README, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;
