//! Serving the receiver on a listener with the limits a public endpoint needs: a cap on a
//! request's head and a deadline to send it, and a cap on open connections that, when reached,
//! sheds the connection that has waited longest for its head or its body (a client trickling
//! either) once it has waited a short grace, while newcomers wait in the listen backlog in
//! order. Genuine
//! callbacks send their heads at once and are inside a request before the grace ends, so a
//! flood of slow heads that keeps reconnecting only ever sheds itself. `axum::serve` offers
//! none of it.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// The limits of [`Receiver::serve`](crate::Receiver::serve).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeLimits {
    /// How long a client has to send a request's head (default 10 s).
    pub header_read_timeout: Duration,
    /// The most connections open at once (default 1 024). When reached, the connection that
    /// has waited longest for a request head is closed to admit the next, once it has waited
    /// [`head_grace`](Self::head_grace).
    pub max_connections: usize,
    /// How long a connection may wait for a request head (or, once the head is read, for the
    /// rest of the body) before, at the connection cap, it may be closed to admit another
    /// (default 200 ms: a genuine client sends its request at once).
    pub head_grace: Duration,
    /// The largest request head read, in bytes (default and least 8 KiB: plenty for these
    /// callbacks; 431 beyond it).
    pub max_head_bytes: usize,
    /// The most header fields in a request (default 32).
    pub max_headers: usize,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            header_read_timeout: Duration::from_secs(10),
            max_connections: 1024,
            head_grace: Duration::from_millis(200),
            max_head_bytes: MIN_HEAD_BYTES,
            max_headers: 32,
        }
    }
}

/// The least head buffer the HTTP/1 server accepts.
const MIN_HEAD_BYTES: usize = 8192;

impl ServeLimits {
    /// The defaults.
    pub fn new() -> ServeLimits {
        ServeLimits::default()
    }
    /// How long a client has to send a request's head.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }
    /// The most connections open at once (at least 1).
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }
    /// How long a connection may wait for a head before it may be shed at the cap.
    pub fn head_grace(mut self, grace: Duration) -> Self {
        self.head_grace = grace;
        self
    }
    /// The largest request head read (at least 8 KiB).
    pub fn max_head_bytes(mut self, bytes: usize) -> Self {
        self.max_head_bytes = bytes.max(MIN_HEAD_BYTES);
        self
    }
    /// The most header fields in a request (at least 8).
    pub fn max_headers(mut self, n: usize) -> Self {
        self.max_headers = n.max(8);
        self
    }
}

/// Where an open connection stands, as admission sees it.
const WAITING_FOR_HEAD: u8 = 0;
const READING_BODY: u8 = 1;
const WORKING: u8 = 2;

/// One open connection.
pub(crate) struct Conn {
    /// [`WAITING_FOR_HEAD`], [`READING_BODY`] or [`WORKING`] (the request was read whole and
    /// its answer is being made: never shed).
    phase: AtomicU8,
    /// Since when (ms from the server's start) it has been in its phase.
    since: AtomicU64,
    start: Instant,
    evict: Notify,
}

impl Conn {
    fn enter(&self, phase: u8) {
        self.since
            .store(self.start.elapsed().as_millis() as u64, Ordering::SeqCst);
        self.phase.store(phase, Ordering::SeqCst);
    }
}

/// Put in a request that has a body: the route says when the body has been read whole (until
/// then a stalled body is as sheddable as a stalled head).
#[derive(Clone)]
pub(crate) struct BodyRead(Arc<Conn>);

impl BodyRead {
    pub(crate) fn done(&self) {
        self.0.enter(WORKING);
    }
}

#[derive(Default)]
struct Open {
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
}

/// Whether one more connection may be accepted now.
enum Room {
    Yes,
    /// Not before this long: every open connection is inside a request, or has waited for its
    /// head less than the grace.
    After(Duration),
}

impl Open {
    /// Make room for one more: below the cap, at once; at it, by closing the connection that
    /// has waited longest for a head, once it has waited `grace` (a genuine client sends its
    /// head at once after connecting). Meanwhile the newcomer waits in the listen backlog, in
    /// order, rather than being closed at the door.
    fn make_room(&self, max: usize, grace: Duration, now_ms: u64) -> Room {
        let mut conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        if conns.len() < max {
            return Room::Yes;
        }
        let oldest = conns
            .iter()
            .filter(|(_, c)| c.phase.load(Ordering::SeqCst) != WORKING)
            .map(|(id, c)| (c.since.load(Ordering::SeqCst), *id))
            .min();
        let grace_ms = grace.as_millis() as u64;
        match oldest {
            Some((since, id)) if now_ms.saturating_sub(since) >= grace_ms => {
                if let Some(c) = conns.remove(&id) {
                    c.evict.notify_one();
                }
                Room::Yes
            }
            Some((since, _)) => Room::After(Duration::from_millis(
                (since + grace_ms).saturating_sub(now_ms).max(1),
            )),
            None => Room::After(Duration::from_millis(10)),
        }
    }
}

/// The router as a hyper service that tells admission when a head was read and when its
/// answer was made.
struct Tracked {
    inner: TowerToHyperService<Router>,
    conn: Arc<Conn>,
}

impl<B> hyper::service::Service<hyper::Request<B>> for Tracked
where
    TowerToHyperService<Router>: hyper::service::Service<hyper::Request<B>>,
    <TowerToHyperService<Router> as hyper::service::Service<hyper::Request<B>>>::Future:
        Send + 'static,
{
    type Response =
        <TowerToHyperService<Router> as hyper::service::Service<hyper::Request<B>>>::Response;
    type Error = <TowerToHyperService<Router> as hyper::service::Service<hyper::Request<B>>>::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn call(&self, mut request: hyper::Request<B>) -> Self::Future {
        let bodiless = matches!(*request.method(), http::Method::GET | http::Method::HEAD)
            || request
                .headers()
                .get(http::header::CONTENT_LENGTH)
                .is_some_and(|v| v.as_bytes() == b"0");
        if bodiless {
            self.conn.enter(WORKING);
        } else {
            self.conn.enter(READING_BODY);
            request.extensions_mut().insert(BodyRead(self.conn.clone()));
        }
        let answer = self.inner.call(request);
        let conn = self.conn.clone();
        Box::pin(async move {
            let answered = answer.await;
            conn.enter(WAITING_FOR_HEAD);
            answered
        })
    }
}

impl crate::Receiver {
    /// Serve the receiver's routes on `listener` until [`shutdown`](Self::shutdown), with
    /// `limits`. Starts the workers. An accept error (such as running out of file descriptors)
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
        self.serve_app(listener, self.router(), limits).await
    }

    /// Serve `app` (your application with [`router`](Self::router) merged into it) on
    /// `listener` with the same limits as [`serve`](Self::serve), until
    /// [`shutdown`](Self::shutdown).
    ///
    /// # Errors
    ///
    /// None today, as [`serve`](Self::serve).
    pub async fn serve_app(
        &self,
        listener: TcpListener,
        app: Router,
        limits: ServeLimits,
    ) -> std::io::Result<()> {
        self.start();
        let open = Arc::new(Open::default());
        let start = Instant::now();
        let mut next_id = 0u64;
        let mut stop = self.shared.stop.subscribe();
        loop {
            // Room first, then accept: while there is none the newcomers wait in the backlog.
            loop {
                let now_ms = start.elapsed().as_millis() as u64;
                match open.make_room(limits.max_connections, limits.head_grace, now_ms) {
                    Room::Yes => break,
                    Room::After(wait) => tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = stop.changed() => return Ok(()),
                    },
                }
            }
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
            next_id += 1;
            let id = next_id;
            let conn = Arc::new(Conn {
                phase: AtomicU8::new(WAITING_FOR_HEAD),
                since: AtomicU64::new(start.elapsed().as_millis() as u64),
                start,
                evict: Notify::new(),
            });
            open.conns
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, conn.clone());
            let svc = Tracked {
                inner: TowerToHyperService::new(app.clone()),
                conn: conn.clone(),
            };
            let open = open.clone();
            tokio::spawn(async move {
                let mut builder = hyper::server::conn::http1::Builder::new();
                builder
                    .timer(TokioTimer::new())
                    .header_read_timeout(limits.header_read_timeout)
                    .max_buf_size(limits.max_head_bytes.max(MIN_HEAD_BYTES))
                    .max_headers(limits.max_headers);
                let serving = builder.serve_connection(TokioIo::new(stream), svc);
                tokio::select! {
                    _ = serving => {}
                    _ = conn.evict.notified() => {}
                }
                open.conns
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&id);
            });
        }
    }
}
