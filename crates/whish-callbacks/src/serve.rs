//! Serving the receiver on a listener with the limits a public endpoint needs: a deadline for a
//! request's headers (a client trickling them a byte at a time is closed) and a cap on open
//! connections (the next waits in the listen backlog). `axum::serve` offers neither.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// The limits of [`Receiver::serve`](crate::Receiver::serve).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeLimits {
    /// How long a client has to send a request's headers (default 10 s).
    pub header_read_timeout: Duration,
    /// The most connections open at once (default 1 024).
    pub max_connections: usize,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            header_read_timeout: Duration::from_secs(10),
            max_connections: 1024,
        }
    }
}

impl ServeLimits {
    /// The defaults.
    pub fn new() -> ServeLimits {
        ServeLimits::default()
    }
    /// How long a client has to send a request's headers.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }
    /// The most connections open at once (at least 1).
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }
}

impl crate::Receiver {
    /// Serve the receiver's routes on `listener` until [`shutdown`](Self::shutdown), with
    /// `limits`: at most `max_connections` open at once, each given `header_read_timeout` to
    /// send a request's headers. An accept error (such as running out of file descriptors)
    /// pauses instead of spinning.
    ///
    /// # Errors
    ///
    /// None today: accept errors are logged and retried; the `Result` leaves room for a
    /// listener that can fail for good.
    ///
    /// ```no_run
    /// # async fn run(receiver: whish_callbacks::Receiver) -> std::io::Result<()> {
    /// let listener = tokio::net::TcpListener::bind("0.0.0.0:8080").await?;
    /// receiver.serve(listener, whish_callbacks::ServeLimits::new()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn serve(&self, listener: TcpListener, limits: ServeLimits) -> std::io::Result<()> {
        let app = self.router();
        let slots = Arc::new(Semaphore::new(limits.max_connections));
        let mut stop = self.shared.stop.subscribe();
        loop {
            let permit = tokio::select! {
                p = slots.clone().acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => return Ok(()),
                },
                _ = stop.changed() => return Ok(()),
            };
            let stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed; pausing");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
                _ = stop.changed() => return Ok(()),
            };
            let svc = TowerToHyperService::new(app.clone());
            let header_read_timeout = limits.header_read_timeout;
            tokio::spawn(async move {
                let _permit = permit;
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(header_read_timeout)
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    }
}
