//! Addresses: the service base URL (HTTPS, or plain HTTP to loopback only) and the public-address
//! check for callback and redirect URLs.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

use crate::validation::{ValidationError, ValidationKind};

/// A service base URL. Endpoint URLs are composed by string: base + path, so a base that ends in
/// `/api` followed by a path that starts with `/api` gives `/api/api/` (the transfer sandbox), as
/// the spec requires; `Url::join` would drop a segment.
#[derive(Clone)]
pub struct BaseUrl {
    text: String,
    /// The same address, parsed once: each call sets its path and query on a copy.
    url: Url,
}

impl BaseUrl {
    /// Check and keep a base URL. `https` is required; `http` only when the host is loopback
    /// (127.0.0.0/8, ::1, localhost), which is what the sandbox and tests use. User info, a query
    /// or a fragment are refused.
    ///
    /// ```
    /// use whish_core::BaseUrl;
    /// let b = BaseUrl::parse("https://h/x/api", "base_url").unwrap();
    /// assert_eq!(b.join("/api/woo/send/money"), "https://h/x/api/api/woo/send/money");
    /// assert!(BaseUrl::parse("http://example.com", "base_url").is_err());
    /// assert!(BaseUrl::parse("http://127.0.0.1:8080", "base_url").is_ok());
    /// ```
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn parse(text: &str, field: &str) -> Result<BaseUrl, ValidationError> {
        let url = Url::parse(text.trim())
            .map_err(|e| ValidationError::invalid(field, format!("not a URL ({e})")))?;
        match url.scheme() {
            "https" => {}
            "http" if url.host().is_some_and(|h| is_loopback_host(&h)) => {}
            "http" => return Err(ValidationError::new(field, ValidationKind::InsecureUrl)),
            other => {
                return Err(ValidationError::invalid(
                    field,
                    format!("scheme `{other}` is not https"),
                ));
            }
        }
        if url.host().is_none() {
            return Err(ValidationError::invalid(field, "has no host"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(ValidationError::invalid(
                field,
                "must not carry user info; credentials go in their own settings",
            ));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(ValidationError::invalid(
                field,
                "must not carry a query or fragment",
            ));
        }
        let mut text = url.as_str().to_owned();
        while text.ends_with('/') {
            text.pop();
        }
        Ok(BaseUrl { text, url })
    }

    /// base + path, by string. `path` starts with `/`.
    pub fn join(&self, path: &str) -> String {
        let mut s = String::with_capacity(self.text.len() + path.len());
        s.push_str(&self.text);
        if !path.starts_with('/') {
            s.push('/');
        }
        s.push_str(path);
        s
    }

    /// The base as text, without a trailing slash.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when the host is loopback (plain http allowed).
    pub fn is_loopback(&self) -> bool {
        self.url.host().is_some_and(|h| is_loopback_host(&h))
    }

    /// The base as a parsed URL.
    pub(crate) fn url(&self) -> &Url {
        &self.url
    }
}

/// Two bases are the same address when their texts are (the parsed form may keep a trailing
/// slash the text drops).
impl PartialEq for BaseUrl {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for BaseUrl {}

impl fmt::Debug for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BaseUrl({:?})", self.text)
    }
}

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn is_loopback_host(host: &Host<&str>) -> bool {
    match host {
        Host::Domain(d) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Refuse what URL parsers disagree on, before parsing: a backslash (`http://8.8.8.8\@127.0.0.1/`
/// has one host for a WHATWG parser and another for an RFC 3986 one), whitespace inside the
/// address, and control characters (a CR/LF would otherwise reach the other side). Leading and
/// trailing spaces are trimmed as before.
fn refuse_ambiguous(text: &str, field: &str) -> Result<(), ValidationError> {
    let t = text.trim();
    if t.contains('\\') {
        return Err(ValidationError::invalid(field, "holds a backslash"));
    }
    if t.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ValidationError::invalid(
            field,
            "holds whitespace or control characters",
        ));
    }
    Ok(())
}

/// Which callback and redirect addresses a client accepts before sending.
///
/// The real services cannot reach loopback or private addresses (the collect service answers
/// HTTP 403 for them), so clients refuse them by default. Against the local sandbox, whose
/// callbacks go to a listener on this machine, a client may opt in to local addresses; the
/// opt-in is refused unless the client's base URL is itself loopback, so it cannot leak into a
/// production configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CallbackAddresses {
    /// Only public `http`/`https` addresses ([`check_public_url`]). The default.
    #[default]
    PublicOnly,
    /// Any `http`/`https` address with a host, loopback and private included. Only with a
    /// loopback base URL (the local sandbox).
    AllowLocal,
}

impl CallbackAddresses {
    /// Confirm this choice for a client of `base`: `AllowLocal` needs a loopback base.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn for_base(self, base: &BaseUrl, field: &str) -> Result<Self, ValidationError> {
        match self {
            CallbackAddresses::AllowLocal if !base.is_loopback() => Err(ValidationError::invalid(
                field,
                "local callback addresses are allowed only with a loopback base URL (the sandbox)",
            )),
            other => Ok(other),
        }
    }

    /// Check one callback or redirect address under this rule.
    ///
    /// ```
    /// use whish_core::CallbackAddresses;
    /// assert!(CallbackAddresses::PublicOnly.check("http://127.0.0.1:9/cb", "callbackUrl").is_err());
    /// assert!(CallbackAddresses::AllowLocal.check("http://127.0.0.1:9/cb", "callbackUrl").is_ok());
    /// assert!(CallbackAddresses::AllowLocal.check("ftp://127.0.0.1/cb", "callbackUrl").is_err());
    /// // What URL parsers disagree on is refused before parsing.
    /// assert!(CallbackAddresses::PublicOnly.check(r"http://8.8.8.8\@127.0.0.1:8080/admin", "callbackUrl").is_err());
    /// assert!(CallbackAddresses::PublicOnly.check("https://shop.example.com/cb\r\nX: y", "callbackUrl").is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn check(self, text: &str, field: &str) -> Result<Url, ValidationError> {
        refuse_ambiguous(text, field)?;
        let url = Url::parse(text.trim())
            .map_err(|e| ValidationError::invalid(field, format!("not a URL ({e})")))?;
        self.check_parsed(&url, field)?;
        Ok(url)
    }

    /// [`check`](Self::check) on an address already parsed by it (under either rule): the
    /// scheme and host rules only, without parsing the text again.
    ///
    /// # Errors
    ///
    /// A `ValidationError` naming the field and the rule the value breaks.
    pub fn check_parsed(self, url: &Url, field: &str) -> Result<(), ValidationError> {
        match self {
            CallbackAddresses::PublicOnly => check_public(url, field),
            CallbackAddresses::AllowLocal => {
                if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
                    return Err(ValidationError::invalid(
                        field,
                        "must be an http or https address with a host",
                    ));
                }
                Ok(())
            }
        }
    }
}

/// Check that a callback or redirect URL is a public `http`/`https` address the service can
/// reach. Refuses other schemes, loopback, private, link-local, unspecified and other
/// non-public IP ranges, and the names `localhost`, `*.localhost`, `*.local`, `*.internal` and
/// single-label names. The collect service answers HTTP 403 for such addresses; refusing them
/// locally gives a clear error and sends nothing.
///
/// ```
/// use whish_core::check_public_url;
/// assert!(check_public_url("https://shop.example.com/cb?order=1", "successCallbackUrl").is_ok());
/// assert!(check_public_url("http://127.0.0.1/cb", "successCallbackUrl").is_err());
/// ```
///
/// # Errors
///
/// A `ValidationError` naming the field and the rule the value breaks.
pub fn check_public_url(text: &str, field: &str) -> Result<Url, ValidationError> {
    refuse_ambiguous(text, field)?;
    let url = Url::parse(text.trim())
        .map_err(|e| ValidationError::invalid(field, format!("not a URL ({e})")))?;
    check_public(&url, field)?;
    Ok(url)
}

/// The rules of [`check_public_url`] on an address already parsed (and checked for ambiguous
/// text when it was parsed): scheme and host only, no second parse.
///
/// # Errors
///
/// A `ValidationError` naming the field and the rule the value breaks.
pub fn check_public(url: &Url, field: &str) -> Result<(), ValidationError> {
    let refuse = |reason: &str| {
        Err(ValidationError::new(
            field,
            ValidationKind::NotPublicUrl {
                reason: reason.to_owned(),
            },
        ))
    };
    if !matches!(url.scheme(), "http" | "https") {
        return refuse("only http and https addresses are accepted");
    }
    match url.host() {
        None => refuse("it has no host"),
        Some(Host::Domain(d)) => {
            // Compared without a lower-case copy: `url` writes an http(s) host in lower case
            // already, and the comparison ignores case anyway.
            let d = d.trim_end_matches('.');
            let ends = |suffix: &str| {
                d.len() >= suffix.len()
                    && d.as_bytes()[d.len() - suffix.len()..]
                        .eq_ignore_ascii_case(suffix.as_bytes())
            };
            if d.eq_ignore_ascii_case("localhost") || ends(".localhost") {
                refuse("localhost names are loopback")
            } else if ends(".local") || ends(".internal") || ends(".lan") {
                refuse("local-network names are not reachable from the service")
            } else if !d.contains('.') {
                refuse("a single-label host name is not a public name")
            } else {
                Ok(())
            }
        }
        Some(Host::Ipv4(ip)) => match non_public_v4(ip) {
            Some(r) => refuse(r),
            None => Ok(()),
        },
        Some(Host::Ipv6(ip)) => match non_public_v6(ip) {
            Some(r) => refuse(r),
            None => Ok(()),
        },
    }
}

/// Why an IPv4 address is not public, or `None` when it is.
pub fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if ip.is_unspecified() || o[0] == 0 {
        Some("unspecified address")
    } else if ip.is_loopback() {
        Some("loopback address")
    } else if ip.is_private() {
        Some("private address")
    } else if ip.is_link_local() {
        Some("link-local address")
    } else if o[0] == 100 && (o[1] & 0xC0) == 64 {
        Some("shared (carrier-grade NAT) address")
    } else if ip.is_broadcast() {
        Some("broadcast address")
    } else if ip.is_multicast() {
        Some("multicast address")
    } else if ip.is_documentation() {
        Some("documentation address")
    } else if o[0] == 198 && (o[1] & 0xFE) == 18 {
        Some("benchmarking address")
    } else if o[0] >= 240 {
        Some("reserved address")
    } else if o[0] == 192 && o[1] == 0 && o[2] == 0 {
        Some("protocol-assignment address")
    } else {
        None
    }
}

/// Why an IPv6 address is not public, or `None` when it is.
pub fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return non_public_v4(v4);
    }
    let s = ip.segments();
    if ip.is_unspecified() {
        Some("unspecified address")
    } else if ip.is_loopback() {
        Some("loopback address")
    } else if (s[0] & 0xFE00) == 0xFC00 {
        Some("unique-local (private) address")
    } else if (s[0] & 0xFFC0) == 0xFE80 {
        Some("link-local address")
    } else if ip.is_multicast() {
        Some("multicast address")
    } else if s[0] == 0x2001 && s[1] == 0x0DB8 {
        Some("documentation address")
    } else if s[0] == 0x0064 && s[1] == 0xFF9B {
        // NAT64 well-known prefix: judge the embedded IPv4 address.
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        non_public_v4(v4)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parsed_address_is_judged_as_its_text_was() {
        for text in [
            "https://shop.example.com/cb?order=1",
            "http://127.0.0.1:8080/ok",
            "http://localhost/cb",
            "https://printer.local/x",
            "https://intranet/x",
            "http://[::1]/cb",
            "http://10.0.0.7/cb",
            "ftp://shop.example.com/cb",
            "https://8.8.8.8/cb",
        ] {
            let url = Url::parse(text).expect("parses");
            for rule in [CallbackAddresses::PublicOnly, CallbackAddresses::AllowLocal] {
                assert_eq!(
                    rule.check(text, "f").map(|_| ()),
                    rule.check_parsed(&url, "f"),
                    "{rule:?} {text}"
                );
            }
        }
    }

    #[test]
    fn url_composition_keeps_both_api_segments() {
        let sandbox = BaseUrl::parse("https://h/x/api", "base_url").expect("ok");
        assert_eq!(
            sandbox.join("/api/woo/send/money"),
            "https://h/x/api/api/woo/send/money"
        );
        let trailing = BaseUrl::parse("https://h/x/api/", "base_url").expect("ok");
        assert_eq!(trailing.join("/api/shops"), "https://h/x/api/api/shops");
        let prod = BaseUrl::parse("https://api.example.com", "base_url").expect("ok");
        assert_eq!(
            prod.join("/api/woo/send/money"),
            "https://api.example.com/api/woo/send/money"
        );
        let collect = BaseUrl::parse("https://c.example.com/itel-service/api", "b").expect("ok");
        assert_eq!(
            collect.join("/payment/svc"),
            "https://c.example.com/itel-service/api/payment/svc"
        );
    }

    #[test]
    fn http_only_to_loopback() {
        for ok in [
            "https://example.com",
            "http://127.0.0.1:9000/api",
            "http://127.8.9.10",
            "http://[::1]:8080",
            "http://localhost:3000",
            "http://sandbox.localhost",
        ] {
            assert!(BaseUrl::parse(ok, "base_url").is_ok(), "{ok}");
        }
        for bad in [
            "http://example.com",
            "http://10.0.0.1",
            "http://[::2]",
            "http://192.168.1.1",
        ] {
            assert_eq!(
                BaseUrl::parse(bad, "base_url").expect_err(bad).kind,
                ValidationKind::InsecureUrl,
                "{bad}"
            );
        }
        assert!(BaseUrl::parse("ftp://example.com", "base_url").is_err());
        assert!(BaseUrl::parse("not a url", "base_url").is_err());
        assert!(BaseUrl::parse("https://user:pw@example.com", "base_url").is_err());
        assert!(BaseUrl::parse("https://example.com/?a=1", "base_url").is_err());
    }

    #[test]
    fn public_address_table() {
        let public = [
            "https://shop.example.com/cb",
            "http://shop.example.com/cb?order=a%20b",
            "https://8.8.8.8/x",
            "https://[2606:4700::1111]/x",
            "https://203.0.114.1/",
            "https://100.128.0.1/",
            "https://172.32.0.1/",
        ];
        for u in public {
            assert!(check_public_url(u, "successCallbackUrl").is_ok(), "{u}");
        }
        let refused = [
            ("http://localhost/cb", "localhost"),
            ("http://LOCALHOST./cb", "localhost"),
            ("http://app.localhost/cb", "localhost"),
            ("http://printer.local/cb", "local-network"),
            ("http://intranet/cb", "single-label"),
            ("http://127.0.0.1/cb", "loopback"),
            ("http://127.1.2.3/cb", "loopback"),
            ("http://0.0.0.0/cb", "unspecified"),
            ("http://10.1.2.3/cb", "private"),
            ("http://172.16.0.1/cb", "private"),
            ("http://172.31.255.255/cb", "private"),
            ("http://192.168.0.10/cb", "private"),
            ("http://169.254.169.254/latest", "link-local"),
            ("http://100.64.0.1/cb", "carrier-grade"),
            ("http://255.255.255.255/cb", "broadcast"),
            ("http://224.0.0.1/cb", "multicast"),
            ("http://192.0.2.1/cb", "documentation"),
            ("http://[::1]/cb", "loopback"),
            ("http://[::]/cb", "unspecified"),
            ("http://[fc00::1]/cb", "unique-local"),
            ("http://[fd12:3456::1]/cb", "unique-local"),
            ("http://[fe80::1]/cb", "link-local"),
            ("http://[::ffff:127.0.0.1]/cb", "loopback"),
            ("http://[::ffff:10.0.0.1]/cb", "private"),
            ("http://[64:ff9b::a00:1]/cb", "private"),
            ("http://[2001:db8::1]/cb", "documentation"),
            ("ftp://example.com/cb", "http and https"),
            ("javascript:alert(1)", "http and https"),
            ("http://2130706433/cb", "loopback"),
            ("http://0x7f.1/cb", "loopback"),
        ];
        for (u, why) in refused {
            let e = check_public_url(u, "successCallbackUrl").expect_err(u);
            match e.kind {
                ValidationKind::NotPublicUrl { reason } => {
                    assert!(reason.contains(why), "{u}: {reason}")
                }
                other => panic!("{u}: {other:?}"),
            }
        }
        assert!(check_public_url("no scheme", "f").is_err());
    }
}
