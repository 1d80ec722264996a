//! Which callback and redirect addresses count as public: the service cannot reach the others
//! (it answers 403), so they are refused before anything is sent.

use whish_core::check_public_url;

#[test]
fn a_public_name_or_address_is_accepted() {
    for url in [
        "https://shop.example.com/cb?order=1",
        "http://shop.example.com./cb",
        "https://SHOP.Example.COM/cb",
        "https://8.8.8.8/cb",
        "https://[2001:4860:4860::8888]/cb",
        "https://localhost.example.com/cb",
        "https://local.example.com/cb",
        "https://example.lan.com/cb",
    ] {
        assert!(check_public_url(url, "successCallbackUrl").is_ok(), "{url}");
    }
}

#[test]
fn a_local_name_is_refused_whatever_its_case_or_final_dot() {
    for url in [
        "http://localhost/cb",
        "http://LOCALHOST./cb",
        "https://app.localhost/cb",
        "https://printer.LOCAL/cb",
        "https://db.internal./cb",
        "https://nas.lan/cb",
        "https://intranet/cb",
        "http://127.0.0.1/cb",
        "http://10.1.2.3/cb",
        "http://[::1]/cb",
        "ftp://shop.example.com/cb",
    ] {
        let e = check_public_url(url, "successCallbackUrl").expect_err(url);
        assert!(
            e.to_string().contains("successCallbackUrl"),
            "{url}: the error names the field: {e}"
        );
    }
}
