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

//!
//! Put the reference in with [`SuccessCallbackUrl::with_reference`](crate::SuccessCallbackUrl::with_reference)
//! (and its three siblings); read it back with [`reference()`]:
//!
//! ```
//! use whish_hosted_collect::{SuccessCallbackUrl, callback::reference};
//! let url = SuccessCallbackUrl::new("https://shop.example.com/cb?src=whish")?
//!     .with_reference("order", "A&B 17/é");
//! assert_eq!(url.as_str(), "https://shop.example.com/cb?src=whish&order=A%26B+17%2F%C3%A9");
//! assert_eq!(reference(url.as_str(), "order").as_deref(), Some("A&B 17/é"));
//! # Ok::<(), whish_core::ValidationError>(())
//! ```

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
    use crate::SuccessCallbackUrl;

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
            let url = SuccessCallbackUrl::new("https://shop.example.com/whish/ok")
                .expect("ok")
                .with_reference("order", value)
                .to_string();
            assert!(!url[url.find('?').expect("query")..].contains(' '));
            assert_eq!(reference(&url, "order").as_deref(), Some(value), "{url}");
            let target = &url[url.find("/whish").expect("path")..];
            assert_eq!(reference(target, "order").as_deref(), Some(value));
        }
    }

    #[test]
    fn keeps_existing_query_and_several_pairs() {
        let url = SuccessCallbackUrl::new("https://shop.example.com/cb?src=whish")
            .expect("ok")
            .with_reference("order", "7")
            .with_reference("try", "2")
            .to_string();
        assert_eq!(url, "https://shop.example.com/cb?src=whish&order=7&try=2");
        assert_eq!(reference(&url, "src").as_deref(), Some("whish"));
        assert_eq!(reference(&url, "missing"), None);
        assert_eq!(reference("/cb", "order"), None);
    }

    #[test]
    fn takes_any_http_address_and_leaves_the_public_rule_to_prepare() {
        // Whether the address must be public is the client's rule, checked at prepare.
        assert!(SuccessCallbackUrl::new("http://localhost/cb").is_ok());
        assert!(SuccessCallbackUrl::new("http://192.168.1.5/cb").is_ok());
        assert!(SuccessCallbackUrl::new("ftp://shop.example.com/cb").is_err());
        assert!(SuccessCallbackUrl::new("not a url").is_err());
    }
}
