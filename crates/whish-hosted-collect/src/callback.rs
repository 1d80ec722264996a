//! Callback and redirect addresses that carry your own reference.
//!
//! The service calls `successCallbackUrl` / `failureCallbackUrl` with a bodiless, unauthenticated
//! GET and adds no identifying parameter of its own; it forwards the query you put in the address
//! unchanged. So put your order reference in the query when you create the payment, and read it
//! back from the URI of the callback request.
//!
//! A callback is a **signal, never proof**: anyone can call the address. On a success callback,
//! call [`CollectClient::status`](crate::CollectClient::status) and fulfil only when it says
//! `success`. A failure callback means one attempt failed; the link stays payable.

use url::Url;
use whish_core::{CallbackAddresses, ValidationError};

/// Append `name=value` to the query of `url` (percent-encoding both), keeping any query it
/// already has. `url` must be an http(s) address; whether it must also be public is checked when
/// the payment is prepared, by the client's rule
/// ([`allow_local_callbacks`](crate::CollectClientBuilder::allow_local_callbacks)).
///
/// ```
/// use whish_hosted_collect::callback::{reference, with_reference};
/// let url = with_reference("https://shop.example.com/cb?src=whish", "order", "A&B 17/é").unwrap();
/// assert_eq!(url, "https://shop.example.com/cb?src=whish&order=A%26B+17%2F%C3%A9");
/// assert_eq!(reference(&url, "order").as_deref(), Some("A&B 17/é"));
/// ```
pub fn with_reference(url: &str, name: &str, value: &str) -> Result<String, ValidationError> {
    with_references(url, &[(name, value)])
}

/// Append several `name=value` pairs; see [`with_reference`].
pub fn with_references(url: &str, pairs: &[(&str, &str)]) -> Result<String, ValidationError> {
    let mut parsed: Url = CallbackAddresses::AllowLocal.check(url, "callback URL")?;
    {
        let mut q = parsed.query_pairs_mut();
        for (k, v) in pairs {
            q.append_pair(k, v);
        }
    }
    Ok(parsed.to_string())
}

/// Read the value of query parameter `name` from the URI (or path-and-query) of a callback
/// request, decoded. `None` when absent.
///
/// Accepts a full URL (`https://shop.example.com/cb?order=A-17`) or what an HTTP server sees as
/// the request target (`/cb?order=A-17`).
pub fn reference(uri: &str, name: &str) -> Option<String> {
    let query = uri.split_once('?').map(|(_, q)| q).unwrap_or("");
    let query = query.split('#').next().unwrap_or("");
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_characters_that_need_escaping() {
        for value in [
            "A-17",
            "a b",
            "x&y=z",
            "100%",
            "é/ü?#",
            "+plus+",
            "line\nbreak",
        ] {
            let url =
                with_reference("https://shop.example.com/whish/ok", "order", value).expect("ok");
            assert!(!url[url.find('?').expect("query")..].contains(' '));
            assert_eq!(reference(&url, "order").as_deref(), Some(value), "{url}");
            let target = &url[url.find("/whish").expect("path")..];
            assert_eq!(reference(target, "order").as_deref(), Some(value));
        }
    }

    #[test]
    fn keeps_existing_query_and_several_pairs() {
        let url = with_references(
            "https://shop.example.com/cb?src=whish",
            &[("order", "7"), ("try", "2")],
        )
        .expect("ok");
        assert_eq!(url, "https://shop.example.com/cb?src=whish&order=7&try=2");
        assert_eq!(reference(&url, "src").as_deref(), Some("whish"));
        assert_eq!(reference(&url, "missing"), None);
        assert_eq!(reference("/cb", "order"), None);
    }

    #[test]
    fn takes_any_http_address_and_leaves_the_public_rule_to_prepare() {
        // Whether the address must be public is the client's rule, checked at prepare.
        assert!(with_reference("http://localhost/cb", "order", "1").is_ok());
        assert!(with_reference("http://192.168.1.5/cb", "order", "1").is_ok());
        assert!(with_reference("ftp://shop.example.com/cb", "order", "1").is_err());
        assert!(with_reference("not a url", "order", "1").is_err());
    }
}
