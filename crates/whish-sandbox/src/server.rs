//! The listener: one HTTP/1.1 connection per task, each of which a fault can close mid-request.

use std::sync::Arc;

use axum::Router;
use axum::extract::Extension;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

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

/// Accept connections until `shutdown` turns true.
pub(crate) async fn serve(listener: TcpListener, app: Router, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let kill = Arc::new(Notify::new());
                let svc = TowerToHyperService::new(app.clone().layer(Extension(Connection(kill.clone()))));
                let mut stop = shutdown.clone();
                tokio::spawn(async move {
                    let conn = hyper::server::conn::http1::Builder::new()
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
