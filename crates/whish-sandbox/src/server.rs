//! The listener: one HTTP/1.1 connection per task, each of which a fault can close mid-request.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Extension;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore, watch};

/// The most connections served at once; the next waits in the listen backlog.
pub const MAX_CONNECTIONS: usize = 256;

/// How long a client has to send a request's headers (a half-sent request is then closed).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Closes the connection a request arrived on (the drop faults).
#[derive(Clone)]
pub(crate) struct Connection(Arc<Notify>);

impl Connection {
    /// Close the connection without an answer; the request's task never completes.
    pub(crate) async fn drop_it<T>(&self) -> T {
        self.0.notify_one();
        std::future::pending().await
    }
}

/// Accept connections until `shutdown` turns true: at most [`MAX_CONNECTIONS`] at once, each
/// given [`HEADER_READ_TIMEOUT`] to send its headers. An accept error (such as running out of file
/// descriptors) waits a moment instead of spinning.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    header_read_timeout: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = shutdown.changed() => break,
        };
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed; pausing");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let kill = Arc::new(Notify::new());
                let svc = TowerToHyperService::new(app.clone().layer(Extension(Connection(kill.clone()))));
                let mut stop = shutdown.clone();
                tokio::spawn(async move {
                    let _permit = permit;
                    let conn = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(header_read_timeout)
                        .serve_connection(TokioIo::new(stream), svc);
                    tokio::select! {
                        _ = conn => {}
                        _ = kill.notified() => {}
                        _ = stop.changed() => {}
                    }
                });
            }
            _ = shutdown.changed() => break,
        }
    }
}

/// The longest one request may take, body included: a body sent a byte at a time is cut off
/// with 408. Longer than any injected delay a test uses.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(60);

/// Middleware: answer 408 to a request that outlives the sandbox's request deadline.
pub(crate) async fn request_deadline(
    axum::extract::State(shared): axum::extract::State<Arc<crate::Shared>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let deadline = shared.settings.request_deadline;
    match tokio::time::timeout(deadline, next.run(request)).await {
        Ok(response) => response,
        Err(_) => (
            axum::http::StatusCode::REQUEST_TIMEOUT,
            "the request took too long",
        )
            .into_response(),
    }
}
