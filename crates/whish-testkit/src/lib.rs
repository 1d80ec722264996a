//! Test support for the whish crates (not published).
//!
//! [`ScriptedServer`] is a loopback HTTP/1.1 peer that answers each request with the next step of
//! a script (a reply, a delay, or a dropped connection) and records every request exactly as it
//! arrived on the wire, so tests can snapshot method, path, headers (secrets redacted) and body.
//!
//! The faults and fixtures several crates' tests share live here too: a disk that fills up
//! ([`tmpfs`]), another process holding a SQLite file's write lock ([`hold_write_lock`]), fresh
//! directories ([`temp_dir`]), the PostgreSQL server of the run ([`postgres_admin_url`]), a
//! program run with a clean environment ([`clean_command`]), a TCP relay whose behaviour changes
//! while its address stays ([`Relay`]), a funded sandbox (feature
//! `sandbox`), and [`not_run`], which lets a test that cannot run here say so, and fails it
//! under CI.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod arbitrary;
#[cfg(feature = "bench")]
pub mod bench;
pub mod budget;
mod code;
mod command;
mod disk;
mod not_run;
mod postgres;
mod relay;
#[cfg(feature = "sandbox")]
mod sandbox;
mod sqlite_lock;
mod temp;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

pub use code::TestCode;
pub use command::{Run, SETTINGS_VARS, clean_command};
pub use disk::{Tmpfs, tmpfs, tmpfs_for};
pub use not_run::{has_command, not_run, under_ci};
#[cfg(feature = "postgres")]
pub use postgres::fresh_postgres_database;
pub use postgres::{POSTGRES_VAR, postgres_admin_url, sqlite_journal_url};
pub use relay::{Relay, RelayMode};
#[cfg(feature = "sandbox")]
pub use sandbox::funded_sandbox;
pub use sqlite_lock::hold_write_lock;
pub use temp::{temp_dir, temp_file};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Header names whose values are secrets and never appear in a snapshot.
pub const SECRET_HEADERS: &[&str] = &["key", "secret", "token", "sessionid", "signature"];

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Step {
    /// Answer with this status, content type and body.
    Reply {
        /// HTTP status.
        status: u16,
        /// Content-Type header.
        content_type: &'static str,
        /// Body.
        body: String,
    },
    /// Wait, then answer.
    Delay(Duration, Box<Step>),
    /// Read the request, then close the connection without answering (a dropped reply).
    Drop,
    /// The inner answer with one more header (`Retry-After`, ...).
    Header(&'static str, String, Box<Step>),
}

impl Step {
    /// HTTP 200 with a JSON body.
    pub fn json(body: impl Into<String>) -> Step {
        Step::Reply {
            status: 200,
            content_type: "application/json",
            body: body.into(),
        }
    }

    /// Any status with a body of the given content type.
    pub fn status(status: u16, content_type: &'static str, body: impl Into<String>) -> Step {
        Step::Reply {
            status,
            content_type,
            body: body.into(),
        }
    }
}

/// One request as it arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WireRequest {
    /// Method.
    pub method: String,
    /// Path and query, as sent.
    pub path: String,
    /// Headers in arrival order, names lower-cased, secret values redacted, `host` left out
    /// (its port changes from run to run). Snapshots show them as `name: value` lines.
    #[serde(serialize_with = "header_lines")]
    pub headers: Vec<(String, String)>,
    /// Body: parsed JSON when it is JSON, else the text.
    pub body: serde_json::Value,
    /// The raw body bytes, as text.
    #[serde(skip)]
    pub raw_body: String,
}

fn header_lines<S: serde::Serializer>(h: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(h.iter().map(|(k, v)| format!("{k}: {v}")))
}

impl WireRequest {
    /// A header value by (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A scripted loopback HTTP peer.
pub struct ScriptedServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    requests: Arc<Mutex<Vec<WireRequest>>>,
    raw_secrets: Arc<Mutex<Vec<String>>>,
    script: Arc<Mutex<VecDeque<Step>>>,
    connections: Arc<std::sync::atomic::AtomicUsize>,
}

impl ScriptedServer {
    /// Start serving `script`; after the last step, every request gets the last step again.
    pub async fn start(script: Vec<Step>) -> ScriptedServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let raw_secrets = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let (reqs, secrets, queue) = (requests.clone(), raw_secrets.clone(), script.clone());
        let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let accepted = connections.clone();
        tokio::spawn(async move {
            let last: Arc<Mutex<Option<Step>>> = Arc::new(Mutex::new(None));
            while let Ok((stream, _)) = listener.accept().await {
                accepted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let (reqs, secrets, script, last) =
                    (reqs.clone(), secrets.clone(), queue.clone(), last.clone());
                let _ = stream.set_nodelay(true);
                tokio::spawn(async move {
                    serve(stream, reqs, secrets, script, last).await;
                });
            }
        });
        ScriptedServer {
            base: format!("http://{addr}"),
            requests,
            raw_secrets,
            script,
            connections,
        }
    }

    /// How many connections were accepted (clients that share a pool reuse one).
    pub fn connections(&self) -> usize {
        self.connections.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Append a step to the script: the next request after the queued ones gets it.
    pub fn push(&self, step: Step) {
        self.script.lock().expect("lock").push_back(step);
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<WireRequest> {
        self.requests.lock().expect("lock").clone()
    }

    /// How many requests arrived.
    pub fn hits(&self) -> usize {
        self.requests.lock().expect("lock").len()
    }

    /// The secret header values as they arrived, unredacted, for tests that check they were
    /// sent.
    pub fn raw_secret_values(&self) -> Vec<String> {
        self.raw_secrets.lock().expect("lock").clone()
    }
}

async fn serve(
    mut stream: TcpStream,
    reqs: Arc<Mutex<Vec<WireRequest>>>,
    secrets: Arc<Mutex<Vec<String>>>,
    script: Arc<Mutex<VecDeque<Step>>>,
    last: Arc<Mutex<Option<Step>>>,
) {
    loop {
        let Some((req, raw)) = read_request(&mut stream).await else {
            return;
        };
        secrets.lock().expect("lock").extend(raw);
        reqs.lock().expect("lock").push(req);
        let step =
            {
                let mut s = script.lock().expect("lock");
                match s.pop_front() {
                    Some(step) => {
                        *last.lock().expect("lock") = Some(step.clone());
                        step
                    }
                    None => last.lock().expect("lock").clone().unwrap_or_else(|| {
                        Step::json(r#"{"status":true,"code":null,"data":null}"#)
                    }),
                }
            };
        if !answer(&mut stream, step).await {
            return;
        }
    }
}

async fn answer(stream: &mut TcpStream, mut step: Step) -> bool {
    let mut extra = String::new();
    loop {
        match step {
            Step::Header(name, value, inner) => {
                extra.push_str(&format!("{name}: {value}\r\n"));
                step = *inner;
            }
            Step::Delay(d, inner) => {
                tokio::time::sleep(d).await;
                step = *inner;
            }
            Step::Drop => {
                let _ = stream.shutdown().await;
                return false;
            }
            Step::Reply {
                status,
                content_type,
                body,
            } => {
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{extra}\r\n",
                    body.len()
                );
                // One write: a head and a body in two segments meet Nagle and delayed ACKs.
                let mut reply = head.into_bytes();
                reply.extend_from_slice(body.as_bytes());
                return stream.write_all(&reply).await.is_ok();
            }
        }
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<(WireRequest, Vec<String>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(pos) = find(&buf, b"\r\n\r\n") {
            break pos;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let mut headers = Vec::new();
    let mut raw_secrets = Vec::new();
    let mut length = 0usize;
    for line in lines {
        let (k, v) = line.split_once(':')?;
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_owned());
        if k == "content-length" {
            length = v.parse().ok()?;
        }
        if k == "host" {
            continue;
        }
        if SECRET_HEADERS.contains(&k.as_str()) {
            raw_secrets.push(v);
            headers.push((k, "[redacted]".to_owned()));
        } else {
            headers.push((k, v));
        }
    }
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let raw_body = String::from_utf8_lossy(&body).into_owned();
    let json = if raw_body.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_str(&raw_body).unwrap_or(serde_json::Value::String(raw_body.clone()))
    };
    Some((
        WireRequest {
            method,
            path,
            headers,
            body: json,
            raw_body,
        },
        raw_secrets,
    ))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Everything a log subscriber writes, shared with the test that reads it: give
/// `move || capture.clone()` to `tracing_subscriber::fmt().with_writer(..)`, then read
/// [`text`](Self::text).
#[derive(Clone, Default)]
pub struct LogCapture(Arc<Mutex<Vec<u8>>>);

impl LogCapture {
    /// What was written so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("lock")).into_owned()
    }
}

impl std::io::Write for LogCapture {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn fixtures_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Read a fixture file from the workspace's `fixtures/` folder.
pub fn fixture(relative: &str) -> String {
    let root = fixtures_root().join(relative);
    std::fs::read_to_string(&root).unwrap_or_else(|e| panic!("fixture {}: {e}", root.display()))
}

/// Every fixture file under `fixtures/<dir>`, as (file name, text), sorted by name.
pub fn fixtures_in(dir: &str) -> Vec<(String, String)> {
    let root = fixtures_root().join(dir);
    let mut out: Vec<(String, String)> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("fixtures {}: {e}", root.display()))
        .filter_map(Result::ok)
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(e.path()).expect("read fixture");
            (name, text)
        })
        .collect();
    out.sort();
    out
}

/// A retry policy for tests: `retries` resends with millisecond backoffs, a 2 s connect timeout
/// and a 400 ms attempt timeout (so a scripted 1.5 s delay is a timeout).
pub fn fast_policy(retries: u32) -> whish_core::Policy {
    whish_core::Policy {
        retry: whish_core::RetryPolicy {
            max_retries: retries,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(20),
        },
        timeouts: whish_core::Timeouts {
            connect: Duration::from_secs(2),
            attempt: Duration::from_millis(400),
        },
    }
}

/// Check a generated code enum: every documented code round-trips through its string, `Display`
/// and serde, is known, and has meaning, handling and endpoints; an unknown string decodes into
/// the `Unknown` arm, keeps its text and is final.
pub fn check_code_enum<C>(
    documented: &[C],
    meaning: impl Fn(&C) -> &'static str,
    endpoints: impl Fn(&C) -> &'static [&'static str],
) where
    C: whish_core::ErrorCode + serde::Serialize + serde::de::DeserializeOwned,
{
    for code in documented {
        let text = code.as_str();
        assert_eq!(&C::parse(text), code, "{text}");
        assert_eq!(code.to_string(), text);
        assert!(!code.is_unknown(), "{text}");
        assert!(
            !meaning(code).is_empty() && !code.handling().is_empty(),
            "{text}"
        );
        assert!(!endpoints(code).is_empty(), "{text}");
        let json = serde_json::to_string(code).expect("json");
        assert_eq!(&serde_json::from_str::<C>(&json).expect("back"), code);
    }
    let unknown = C::parse("some.new.code");
    assert!(unknown.is_unknown());
    assert_eq!(unknown.as_str(), "some.new.code");
    assert!(
        unknown.is_final(),
        "an undocumented code is treated as final"
    );
    assert!(!unknown.is_challenge());
}
