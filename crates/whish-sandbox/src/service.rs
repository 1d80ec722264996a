//! The service endpoints: identify, journal, authenticate, apply faults, answer.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use crate::Shared;
use crate::clock::lock;
use crate::collect::{self, Created};
use crate::endpoint::{Endpoint, Service};
use crate::envelope::Reply;
use crate::fault::Fault;
use crate::journal::{ReceivedRequest, SECRET_HEADERS};
use crate::server::Connection;
use crate::{topup, transfer};

/// Every request to a service prefix lands here.
pub(crate) async fn dispatch(
    State(shared): State<Arc<Shared>>,
    Extension(connection): Extension<Connection>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some((endpoint, provider)) = Endpoint::identify(&method, uri.path()) else {
        if crate::endpoint::is_removed_rate_query(uri.path()) {
            // v1.4.2 removed the rate query; the spec's code for a retired endpoint.
            return Reply::fail("deprecation", "This endpoint version is deprecated.")
                .into_response();
        }
        return (StatusCode::NOT_FOUND, "no such endpoint in the sandbox").into_response();
    };
    let fault = shared.next_fault(endpoint);
    shared.journal(endpoint, &method, &uri, &headers, &body, fault);
    match fault {
        Some(Fault::DropRequest) => return connection.drop_it().await,
        Some(Fault::Page(status)) => return proxy_page(status, false),
        Some(Fault::Code(code)) => {
            return Reply::fail(code, "A fault injected by the sandbox's control API.")
                .into_response();
        }
        _ => {}
    }
    let response = shared.handle(endpoint, provider.as_deref(), &headers, uri.query(), &body);
    match fault {
        Some(Fault::DropReply) => connection.drop_it().await,
        Some(Fault::Delay(d)) => {
            tokio::time::sleep(d).await;
            response
        }
        Some(Fault::Stall) => {
            tokio::time::sleep(crate::fault::STALL).await;
            response
        }
        Some(Fault::AppliedPage(status)) => proxy_page(status, true),
        Some(Fault::Pending) => match endpoint.service() {
            Service::Transfer => Reply::pending().into_response(),
            Service::Collect | Service::Topup => Reply::pending_text().into_response(),
        },
        _ => response,
    }
}

/// What a proxy, a firewall or a load balancer answers in front of a service: an HTML page with
/// this status and no envelope, whether the request behind it was `applied` or not.
fn proxy_page(status: u16, applied: bool) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    let what = if applied {
        "The service's reply was stopped"
    } else {
        "The request was stopped before the service"
    };
    let body = format!(
        "<html><head><title>{code}</title></head><body><h1>{code}</h1><p>{what} (a fault injected by the sandbox).</p></body></html>"
    );
    (
        code,
        [(axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

impl Shared {
    fn next_fault(&self, endpoint: Endpoint) -> Option<Fault> {
        let mut faults = lock(&self.faults);
        let queue = faults.get_mut(&endpoint)?;
        let (fault, left) = queue.front_mut()?;
        let fault = *fault;
        *left -= 1;
        if *left == 0 {
            queue.pop_front();
        }
        Some(fault)
    }

    fn journal(
        &self,
        endpoint: Endpoint,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: &[u8],
        fault: Option<Fault>,
    ) {
        let headers = headers
            .iter()
            .map(|(k, v)| {
                let value = if SECRET_HEADERS.contains(&k.as_str()) {
                    "<redacted>".to_owned()
                } else {
                    String::from_utf8_lossy(v.as_bytes()).into_owned()
                };
                format!("{k}: {value}")
            })
            .collect();
        lock(&self.journal).push(ReceivedRequest {
            seq: 0,
            endpoint,
            method: method.to_string(),
            path: uri
                .path_and_query()
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default(),
            headers,
            body: String::from_utf8_lossy(body).into_owned(),
            fault: fault.map(|f| f.to_string()),
        });
    }

    /// Check the service's credentials and headers; for the transfer service, the Request-id.
    fn authenticate(&self, service: Service, h: &HeaderMap) -> Result<Option<i64>, Reply> {
        let s = &self.settings;
        match service {
            Service::Transfer => {
                if header(h, "username") != Some(s.transfer.username.as_str())
                    || header(h, "key") != Some(s.transfer.key.as_str())
                {
                    return Err(Reply::fail(
                        "api.account.invalid_request",
                        "Invalid account request: wrong or missing username or key.",
                    ));
                }
                match header(h, "request-id").map(str::parse::<i64>) {
                    Some(Ok(id)) => Ok(Some(id)),
                    _ => Err(Reply::fail(
                        "api.account.invalid_request",
                        "Invalid account request: the Request-id header is required and numeric.",
                    )),
                }
            }
            Service::Collect => {
                if header(h, "channel") != Some(s.collect.channel.as_str())
                    || header(h, "secret") != Some(s.collect.secret.as_str())
                {
                    return Err(Reply::fail(
                        "auth.session_not_exist",
                        "Missing or invalid channel or secret.",
                    ));
                }
                if header(h, "websiteurl") != Some(s.collect.website_url.as_str())
                    || header(h, "user-agent").is_none()
                {
                    return Err(Reply::fail(
                        "400",
                        "The websiteUrl (as issued) and User-Agent headers are required.",
                    ));
                }
                Ok(None)
            }
            Service::Topup => {
                if header(h, "sessionid") != Some(s.topup.session_id.as_str())
                    || header(h, "token") != Some(s.topup.token.as_str())
                    || header(h, "user-agent").is_none()
                {
                    return Err(Reply::fail(
                        "external.invalid.request",
                        "The sessionId, token and User-Agent headers are required and must match.",
                    ));
                }
                Ok(None)
            }
        }
    }

    fn handle(
        &self,
        endpoint: Endpoint,
        provider: Option<&str>,
        headers: &HeaderMap,
        query: Option<&str>,
        body: &[u8],
    ) -> Response {
        let request_id = match self.authenticate(endpoint.service(), headers) {
            Ok(id) => id.unwrap_or_default(),
            Err(reply) => return reply.into_response(),
        };
        let now = self.clock.now();
        let mut world = lock(&self.world);
        let w = &mut *world;
        if endpoint.service() == Service::Collect {
            w.collect.expire(now);
        }
        let s = &self.settings;
        let provider = provider.unwrap_or_default();
        let reply = match endpoint {
            Endpoint::TransferFees => transfer::fees(&w.transfer, body),
            Endpoint::TransferSend => transfer::send(&mut w.transfer, s, request_id, body, now),
            Endpoint::TransferCancel => transfer::cancel(&mut w.transfer, s, body, now),
            Endpoint::TransferStatus => transfer::status(&w.transfer, body),
            Endpoint::TransferCountries => Reply::ok(w.transfer.countries_json()),
            Endpoint::TransferActivity => transfer::report(&w.transfer, body, false, now),
            Endpoint::TransferStatement => transfer::report(&w.transfer, body, true, now),
            Endpoint::TransferModes => {
                Reply::ok(serde_json::json!(["CASH_COLLECTION", "MOBILE_WALLET"]))
            }
            Endpoint::Governorates => Reply::ok(transfer::data::governorates()),
            Endpoint::Shops => transfer::shops(query),
            Endpoint::CollectBalance => collect::balance(&w.collect, s, query),
            Endpoint::CollectCreate => {
                match collect::create(&mut w.collect, s, &self.root, body, now) {
                    Created::Reply(r) => r,
                    Created::Forbidden(why) => {
                        return (StatusCode::FORBIDDEN, format!("Forbidden: {why}"))
                            .into_response();
                    }
                }
            }
            Endpoint::CollectStatus => collect::status(&w.collect, body),
            Endpoint::CollectRefund => collect::refund(&mut w.collect, body),
            Endpoint::TopupBalance => topup::balance(&w.topup),
            Endpoint::TopupFetch => topup::fetch(provider, body),
            Endpoint::TopupPay => topup::pay(&mut w.topup, provider, body, now),
        };
        reply.into_response()
    }
}
