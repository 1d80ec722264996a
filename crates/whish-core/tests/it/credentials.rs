//! Credentials from a source, read on every attempt, and another account on the same pool.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::{Error, TestCode};
use whish_core::credentials::{FromFile, FromFn, SecretSource};
use whish_core::runtime::Resend;
use whish_core::runtime::{Method, Request};
use whish_core::{ClientSettings, SecretString, ServiceHeaders, SetupError};
use whish_testkit::{ScriptedServer, Step};

const OK: &str = r#"{"status":true,"code":null,"data":null}"#;

fn read() -> Request {
    Request::new("test.read", Method::POST, "/read").resend(Resend::Read)
}

fn keys_seen(server: &ScriptedServer) -> Vec<String> {
    server.raw_secret_values()
}

#[tokio::test]
async fn a_key_rotated_in_its_file_is_sent_on_the_next_attempt() {
    let server = ScriptedServer::start(vec![Step::json(OK)]).await;
    let dir = std::env::temp_dir().join(format!("whish-cred-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("key");
    std::fs::write(&file, "key-one\n").expect("write");
    let t = ClientSettings::new(server.base.clone())
        .build_transport(
            "test",
            ServiceHeaders::new().secret_from("key", "key", Arc::new(FromFile::new(&file))),
        )
        .expect("transport");
    let _: Result<_, Error> = t.call::<serde_json::Value, TestCode>(read()).await;
    // Replaced the way secret managers do: a new file moved over the old one. The same length
    // and, on a coarse clock, the same modification time: the file itself tells them apart.
    let next = dir.join("key.new");
    std::fs::write(&next, "key-two\n").expect("write");
    let old = std::fs::metadata(&file)
        .expect("meta")
        .modified()
        .expect("mtime");
    std::fs::File::options()
        .write(true)
        .open(&next)
        .expect("open")
        .set_modified(old)
        .expect("same mtime");
    std::fs::rename(&next, &file).expect("rename");
    let _: Result<_, Error> = t.call::<serde_json::Value, TestCode>(read()).await;
    assert_eq!(keys_seen(&server), ["key-one", "key-two"]);
    std::fs::remove_dir_all(&dir).expect("clean");
}

#[tokio::test]
async fn a_closure_is_asked_before_every_attempt_and_its_failure_sends_nothing() {
    let server = ScriptedServer::start(vec![Step::json(OK)]).await;
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let source = FromFn(move || {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        if n >= 2 {
            Err("the secrets manager is down".to_owned())
        } else {
            Ok(SecretString::from(format!("token-{n}")))
        }
    });
    let t = ClientSettings::new(server.base.clone())
        .build_transport(
            "test",
            ServiceHeaders::new().secret_from("token", "token", Arc::new(source)),
        )
        .expect("transport: the source answered at build");
    let r: Result<_, Error> = t.call::<serde_json::Value, TestCode>(read()).await;
    assert!(r.is_ok());
    let e = t
        .call::<serde_json::Value, TestCode>(read())
        .await
        .expect_err("no value");
    assert!(e.nothing_sent(), "{e:?}");
    assert!(e.to_string().contains("token"), "names the setting: {e}");
    assert!(!e.to_string().contains("token-"), "never the value: {e}");
    assert_eq!(
        keys_seen(&server),
        ["token-1"],
        "asked once at build, once per attempt"
    );
}

#[tokio::test]
async fn another_account_shares_the_connection_pool() {
    let server = ScriptedServer::start(vec![Step::json(OK)]).await;
    let first = ClientSettings::new(server.base.clone())
        .build_transport(
            "test",
            ServiceHeaders::new()
                .required("username", "username", Some("merchant-1"))
                .secret("key", "key", Some(&SecretString::from("key-of-one"))),
        )
        .expect("transport");
    let second = first
        .with_headers(
            ServiceHeaders::new()
                .required("username", "username", Some("merchant-2"))
                .secret("key", "key", Some(&SecretString::from("key-of-two"))),
        )
        .expect("second account");
    for t in [&first, &second, &first, &second] {
        let _: Result<_, Error> = t.call::<serde_json::Value, TestCode>(read()).await;
    }
    let users: Vec<String> = server
        .requests()
        .iter()
        .filter_map(|r| {
            r.headers
                .iter()
                .find(|(k, _)| k == "username")
                .map(|(_, v)| v.clone())
        })
        .collect();
    assert_eq!(
        users,
        ["merchant-1", "merchant-2", "merchant-1", "merchant-2"]
    );
    assert_eq!(
        keys_seen(&server),
        ["key-of-one", "key-of-two", "key-of-one", "key-of-two"]
    );
    assert_eq!(
        server.connections(),
        1,
        "one pool, one kept-alive connection"
    );
    // A bad credential for the second account fails its creation, naming the setting.
    let e: SetupError = first
        .with_headers(ServiceHeaders::new().required("username", "username", Some(" ")))
        .expect_err("blank");
    assert!(e.to_string().contains("username"), "{e}");
}

#[test]
fn an_unset_variable_fails_the_build_naming_the_setting() {
    let source = whish_core::credentials::FromEnv("WHISH_TEST_SURELY_UNSET_VARIABLE".into());
    assert!(source.current().is_err());
    let e = ClientSettings::new("http://127.0.0.1:9")
        .build_transport(
            "test",
            ServiceHeaders::new().secret_from("key", "key", Arc::new(source)),
        )
        .expect_err("unset");
    assert!(e.to_string().contains("key"), "{e}");
}
