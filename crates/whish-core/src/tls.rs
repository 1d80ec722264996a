//! The TLS stack, chosen at build time by one of three features of this crate (and of the
//! `whish` facade, which forwards them):
//!
//! | feature | stack | builds | note |
//! |---|---|---|---|
//! | `rustls-ring` (default) | rustls with *ring* | C and assembly through `cc` | a light build, nothing to install |
//! | `rustls-aws-lc-rs` | rustls with aws-lc-rs | a long C build of aws-lc-sys | reqwest's own default |
//! | `native-tls` | the platform's TLS (OpenSSL on Linux, Security.framework, SChannel) | links the system library | needs OpenSSL headers on Linux |
//!
//! Every rustls build verifies certificates with the platform's verifier and trust store, plus
//! the roots given to [`ClientSettings::add_root_certificate_pem`](crate::ClientSettings::add_root_certificate_pem).
//! If several features are enabled, `native-tls` wins over `rustls-aws-lc-rs`, which wins over
//! `rustls-ring` (reqwest's own precedence). A build with none of them speaks only plain HTTP to
//! loopback (the sandbox): an `https://` base URL is then a [`SetupError`] naming the features.
//!
//! The ring build hands reqwest a complete rustls configuration, and, when it builds a client,
//! installs ring as the process-wide default provider **only if none is installed yet**.
//!
//! **Why, and what it means for you, with `rustls-ring`.** reqwest 0.13 has no ring feature of
//! its own: the SDK enables reqwest's `rustls-no-provider`. A reqwest client of your own program
//! that enables no TLS feature of reqwest itself would then find rustls without a provider, and
//! reqwest panics when it is built ("No rustls crypto provider is configured"). So the first SDK
//! client built installs ring as the default, and your own clients built after it work. If your
//! program installs a provider of its own, install it **before** building an SDK client: the SDK
//! never replaces one (its own clients carry their configuration and do not need the default),
//! but a provider installed after the SDK's is refused by rustls (`install_default` returns
//! `Err`). A client of yours built before any SDK client still needs [`install_default_provider`]
//! or [`client_builder`]. A program whose reqwest has its default features (rustls with
//! aws-lc-rs) is not affected.

use crate::error::SetupError;

/// The TLS stack this build of the SDK uses, by its feature name (`"rustls-ring"`,
/// `"rustls-aws-lc-rs"`, `"native-tls"`), or `None` when it was built without TLS (plain HTTP to
/// loopback only).
pub const fn backend() -> Option<&'static str> {
    if cfg!(feature = "native-tls") {
        Some("native-tls")
    } else if cfg!(feature = "rustls-aws-lc-rs") {
        Some("rustls-aws-lc-rs")
    } else if cfg!(feature = "rustls-ring") {
        Some("rustls-ring")
    } else {
        None
    }
}

/// Make rustls with *ring* the process-wide default crypto provider, unless one is installed
/// already; `true` if this call installed it. The SDK's own clients never need it; see the
/// [module documentation](self) for the other reqwest clients of your program that do.
#[cfg(feature = "rustls-ring")]
pub fn install_default_provider() -> bool {
    rustls::crypto::ring::default_provider()
        .install_default()
        .is_ok()
}

/// A `reqwest::ClientBuilder` with this build's TLS stack applied, the way the SDK's own clients
/// get it: for the other HTTP clients of a program that uses the SDK (the sandbox's callback
/// sender, a test's raw client), so that none of them depends on a process-wide provider.
///
/// # Errors
///
/// A `SetupError` when a required setting is missing or a setting is invalid (the base URL, a
/// credential, `https://` with no TLS stack built in, local callbacks with a base URL that is not
/// loopback).
pub fn client_builder() -> Result<reqwest::ClientBuilder, SetupError> {
    configure(reqwest::Client::builder(), &[], false)
}

/// Apply the chosen stack and the extra root certificates (PEM bundles) to `builder`.
pub(crate) fn configure(
    builder: reqwest::ClientBuilder,
    roots: &[Vec<u8>],
    https: bool,
) -> Result<reqwest::ClientBuilder, SetupError> {
    match backend() {
        None if https || !roots.is_empty() => Err(SetupError::invalid(
            if https {
                "base_url"
            } else {
                "root_certificate"
            },
            "needs TLS, and this build has none: enable the `rustls-ring` (default), \
             `rustls-aws-lc-rs` or `native-tls` feature",
        )),
        None => Ok(builder),
        Some("rustls-ring") => ring::configure(builder, roots),
        Some(_) => reqwest_roots(builder, roots),
    }
}

/// The stacks reqwest builds itself: hand it the extra roots.
#[cfg(any(
    feature = "native-tls",
    feature = "rustls-aws-lc-rs",
    feature = "rustls-ring"
))]
fn reqwest_roots(
    builder: reqwest::ClientBuilder,
    roots: &[Vec<u8>],
) -> Result<reqwest::ClientBuilder, SetupError> {
    let mut certs = Vec::new();
    for pem in roots {
        let found = reqwest::Certificate::from_pem_bundle(pem).map_err(|e| {
            SetupError::invalid("root_certificate", "is not a PEM certificate").with_source(e)
        })?;
        if found.is_empty() {
            return Err(no_certificate());
        }
        certs.extend(found);
    }
    Ok(if certs.is_empty() {
        builder
    } else {
        builder.tls_certs_merge(certs)
    })
}

#[cfg(not(any(
    feature = "native-tls",
    feature = "rustls-aws-lc-rs",
    feature = "rustls-ring"
)))]
fn reqwest_roots(
    builder: reqwest::ClientBuilder,
    _roots: &[Vec<u8>],
) -> Result<reqwest::ClientBuilder, SetupError> {
    Ok(builder)
}

#[cfg_attr(
    not(any(
        feature = "native-tls",
        feature = "rustls-aws-lc-rs",
        feature = "rustls-ring"
    )),
    allow(dead_code)
)]
fn no_certificate() -> SetupError {
    SetupError::invalid("root_certificate", "holds no PEM certificate")
}

#[cfg(feature = "rustls-ring")]
mod ring {
    use std::sync::Arc;

    use rustls::ClientConfig;
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    use rustls_platform_verifier::Verifier;

    use super::no_certificate;
    use crate::error::SetupError;

    /// A rustls configuration with the ring provider and the platform verifier (plus `roots`),
    /// offering HTTP/1.1 (and h2 with the `http2` feature) by ALPN, as reqwest would build it.
    pub(super) fn configure(
        builder: reqwest::ClientBuilder,
        roots: &[Vec<u8>],
    ) -> Result<reqwest::ClientBuilder, SetupError> {
        let mut extra = Vec::new();
        for pem in roots {
            let mut found = 0;
            for cert in CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|e| {
                    SetupError::invalid("root_certificate", "is not a PEM certificate")
                        .with_source(e)
                })?;
                extra.push(cert);
                found += 1;
            }
            if found == 0 {
                return Err(no_certificate());
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = || SetupError::invalid("tls", "could not be configured");
        let verifier = if extra.is_empty() {
            Verifier::new(provider.clone())
        } else {
            Verifier::new_with_extra_roots(extra, provider.clone())
        }
        .map_err(|e| tls().with_source(e))?;
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| tls().with_source(e))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        config.alpn_protocols = if cfg!(feature = "http2") {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        } else {
            vec![b"http/1.1".to_vec()]
        };
        Ok(builder.tls_backend_preconfigured(config))
    }
}

#[cfg(not(feature = "rustls-ring"))]
mod ring {
    use crate::error::SetupError;

    pub(super) fn configure(
        builder: reqwest::ClientBuilder,
        _roots: &[Vec<u8>],
    ) -> Result<reqwest::ClientBuilder, SetupError> {
        Ok(builder)
    }
}
