//! Arbitrary headers, bodies and queries against the routes: never a panic, never a 5xx.

use axum::body::Body;
use axum::http::Request;
use proptest::prelude::*;
use tower::ServiceExt;
use whish_callbacks::{HandlerError, PaymentUpdate, Receiver, TransferNotification};
use whish_core::{ClientSettings, SecretString};
use whish_money_transfer::callback::AcceptUnverified;

fn receiver(rt: &tokio::runtime::Runtime) -> axum::Router {
    rt.block_on(async {
        // A collect client pointed at a closed port: status reads fail, which must not show.
        let ua: whish_core::UserAgent =
            "Hostile/1.0 (https://shop.example.com; dev@shop.example.com)"
                .parse()
                .expect("ua");
        let collect = whish_hosted_collect::CollectClient::builder(
            ClientSettings::new("http://127.0.0.1:9").user_agent(ua),
        )
        .channel("c")
        .secret(SecretString::from("s"))
        .website_url("w")
        .build()
        .expect("client");
        Receiver::builder()
            .transfer(AcceptUnverified, |_: TransferNotification| async {
                Ok::<(), HandlerError>(())
            })
            .collect(collect, |_: PaymentUpdate| async {
                Ok::<(), HandlerError>(())
            })
            .collect_currency(whish_core::Currency::Usd)
            .body_limit(2048)
            .build()
            .router()
    })
}

fn header_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{0,20}",
        "-?[0-9]{1,25}",
        "[A-Za-z0-9+/=]{0,64}",
        "\\PC{0,40}",
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..3000),
        (any::<i64>(), "\\PC{0,20}", "\\PC{0,12}").prop_map(|(id, t, s)| {
            serde_json::json!({"date": "x", "externalId": id, "transferId": t, "status": s})
                .to_string()
                .into_bytes()
        }),
        Just(b"{\"externalId\":1e400,\"transferId\":null}".to_vec()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn no_input_makes_a_route_panic_or_answer_5xx(
        ts in header_value(),
        sig in header_value(),
        with_ts in any::<bool>(),
        with_sig in any::<bool>(),
        body in body(),
        query in "\\PC{0,60}",
        method in 0u8..4,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        let router = receiver(&rt);
        let status = rt.block_on(async {
            let request = match method {
                0 | 1 => {
                    let mut r = Request::post(whish_callbacks::TRANSFER_PATH);
                    if with_ts
                        && let Ok(v) = axum::http::HeaderValue::from_str(&ts)
                    {
                        r = r.header("timestamp", v);
                    }
                    if with_sig
                        && let Ok(v) = axum::http::HeaderValue::from_str(&sig)
                    {
                        r = r.header("signature", v);
                    }
                    r.body(Body::from(body.clone()))
                }
                2 => {
                    let q: String = url_escape(&query);
                    Request::get(format!("{}?{q}", whish_callbacks::SUCCESS_PATH)).body(Body::empty())
                }
                _ => {
                    let q: String = url_escape(&query);
                    Request::get(format!("{}?externalId={q}", whish_callbacks::FAILURE_PATH)).body(Body::empty())
                }
            };
            match request {
                Ok(req) => router.oneshot(req).await.expect("answer").status(),
                Err(_) => axum::http::StatusCode::BAD_REQUEST,
            }
        });
        prop_assert!(!status.is_server_error(), "{status}");
    }
}

fn url_escape(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~=&".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
