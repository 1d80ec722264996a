//! What the tests of `whish payouts cancel` and `follow-up` share: a sent batch, the payouts
//! commands, the journal's and the sandbox's view, and small loopback proxies.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;

use crate::support::*;
use serde_json::Value;
use whish_sandbox::{Endpoint, Sandbox};

/// A batch sent through the command, with its sandbox and its own journal.
pub struct Sent {
    pub sb: Sandbox,
    pub env: Vec<(String, String)>,
    pub file: String,
    pub dir: PathBuf,
    pub batch: String,
}

/// A batch of `rows` cash rows sent through `whish payouts send` (every row accepted), with its
/// own SQLite journal.
pub async fn sent_batch(name: &str, rows: usize) -> Sent {
    let sb = funded_sandbox().await;
    let mut env = sb.env_vars();
    let file = cash_payouts_file(&format!("{name}.csv"), "A9-", "+961706", 4, rows);
    let dir = file.parent().expect("dir").to_owned();
    env.push(journal_at(&dir.join("journal.sqlite")));
    let file = file.display().to_string();
    let results = dir.join("send.csv").display().to_string();
    let send = payouts_cmd("send", &file, name, &results);
    let sent = whish(&send, &env).await;
    assert_eq!(sent.code, 0, "setup: every row sent: {sent:?}");
    assert_eq!(sb.transfers().len(), rows);
    Sent {
        sb,
        env,
        file,
        dir,
        batch: name.to_owned(),
    }
}

/// An hour from now, as `--uncollected-before` reads it (every row sent so far is due).
pub fn in_an_hour() -> String {
    (time::OffsetDateTime::now_utc() + time::Duration::hours(1))
        .format(time::macros::format_description!(
            "[year]-[month]-[day] [hour]:[minute]:[second]"
        ))
        .expect("format")
}

/// The env with the transfer base URL pointed at `addr` instead of the sandbox.
pub fn via(s: &Sent, addr: SocketAddr) -> Vec<(String, String)> {
    s.env
        .iter()
        .map(|(k, v)| {
            if k == "WHISH_TRANSFER_BASE_URL" {
                (
                    k.clone(),
                    v.replace(&s.sb.addr().to_string(), &addr.to_string()),
                )
            } else {
                (k.clone(), v.clone())
            }
        })
        .collect()
}

/// The args of `whish payouts cancel` (or `follow-up` when `cutoff` is None), results as JSON
/// lines in `out`, `--retries 0`.
pub fn payouts_args(s: &Sent, cutoff: Option<&str>, out: &str) -> (Vec<String>, PathBuf) {
    let results = s.dir.join(out);
    let mut args: Vec<String> = vec!["--retries".into(), "0".into(), "payouts".into()];
    match cutoff {
        Some(c) => args.extend([
            "cancel".into(),
            s.file.clone(),
            "--batch".into(),
            s.batch.clone(),
            "--uncollected-before".into(),
            c.into(),
        ]),
        None => args.extend([
            "follow-up".into(),
            s.file.clone(),
            "--batch".into(),
            s.batch.clone(),
        ]),
    }
    args.extend(["--results".into(), results.display().to_string()]);
    args.extend(SENDER.iter().map(|s| (*s).to_owned()));
    (args, results)
}

/// The JSON lines of a results file (none when it was not written).
pub fn rows_of(path: &PathBuf) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// `whish payouts cancel|follow-up` with `env`.
pub async fn payouts_with(
    s: &Sent,
    env: &[(String, String)],
    cutoff: Option<&str>,
    out: &str,
) -> (Run, Vec<Value>) {
    let (args, results) = payouts_args(s, cutoff, out);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = whish(&a, env).await;
    (run, rows_of(&results))
}

/// `whish payouts cancel|follow-up` with the batch's own env.
pub async fn payouts(s: &Sent, cutoff: Option<&str>, out: &str) -> (Run, Vec<Value>) {
    payouts_with(s, &s.env.clone(), cutoff, out).await
}

/// `whish journal list ARGS`, one JSON value a line.
pub async fn journal_lines(s: &Sent, args: &[&str]) -> Vec<Value> {
    let mut a = vec!["journal", "list", "--limit", "1000"];
    a.extend(args);
    let r = whish(&a, &s.env).await;
    r.stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

/// The journal's open entries.
pub async fn open_entries(s: &Sent) -> Vec<Value> {
    journal_lines(s, &["--open"]).await
}

/// The status of every transfer the sandbox holds.
pub fn sandbox_status(sb: &Sandbox) -> Vec<String> {
    sb.transfers().into_iter().map(|t| t.status).collect()
}

/// The Request-ids of the requests to `endpoint` the sandbox received.
pub fn request_ids(sb: &Sandbox, endpoint: Endpoint) -> Vec<String> {
    sb.requests()
        .into_iter()
        .filter(|r| r.endpoint == endpoint)
        .filter_map(|r| request_id_of(&r))
        .collect()
}

/// The `Request-id` header of a request the sandbox received.
pub fn request_id_of(r: &whish_sandbox::ReceivedRequest) -> Option<String> {
    r.headers.iter().find_map(|h| {
        let (k, v) = h.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("request-id")
            .then(|| v.trim().to_owned())
    })
}

/// One HTTP/1.1 request read from `c`: its head and its body (by `Content-Length`).
pub fn read_request(c: &mut TcpStream) -> std::io::Result<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = c.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut body = buf[end + 4..].to_vec();
    let want = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while body.len() < want {
        let n = c.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Ok((head, body))
}

/// Send `head` + `body` to `upstream` with `Connection: close`, the `Request-id` header replaced
/// when `request_id` is given; the raw reply (which says `Connection: close` too).
pub fn forward(
    upstream: SocketAddr,
    head: &str,
    body: &[u8],
    request_id: Option<&str>,
) -> std::io::Result<Vec<u8>> {
    let mut out = String::new();
    for (i, l) in head.split("\r\n").enumerate() {
        let low = l.to_ascii_lowercase();
        if i > 0 && low.starts_with("connection:") {
            continue;
        }
        if i > 0
            && low.starts_with("request-id:")
            && let Some(id) = request_id
        {
            out.push_str(&format!("Request-id: {id}\r\n"));
            continue;
        }
        out.push_str(l);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    let mut u = TcpStream::connect(upstream)?;
    u.write_all(out.as_bytes())?;
    u.write_all(body)?;
    let mut resp = Vec::new();
    u.read_to_end(&mut resp)?;
    Ok(resp)
}

/// A proxy that forwards requests one connection at a time and stops listening (so every later
/// connection is refused: nothing sent) right after it has forwarded a request whose head
/// contains `last`, before it answers it.
pub fn closing_proxy(upstream: SocketAddr, last: &'static str) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        let mut listener = Some(l);
        while let Some(l) = listener.as_ref() {
            let Ok((mut c, _)) = l.accept() else { continue };
            let Ok((head, body)) = read_request(&mut c) else {
                continue;
            };
            let Ok(resp) = forward(upstream, &head, &body, None) else {
                continue;
            };
            if head.contains(last) {
                listener = None;
            }
            let _ = c.write_all(&resp);
        }
    });
    addr
}

/// A proxy that, on a cancel, first sends the same cancel under Request-id `other` (someone
/// else's cancel of the same transfer), then forwards the caller's own.
pub fn racing_proxy(upstream: SocketAddr, other: &'static str) -> SocketAddr {
    racing_proxy_at("127.0.0.1:0".parse().expect("an address"), upstream, other)
}

/// [`racing_proxy`] on `listen`: the address an earlier proxy of the same test let go, so that
/// both runs have one base URL (a journal leaves an entry of another base URL alone).
pub fn racing_proxy_at(
    listen: SocketAddr,
    upstream: SocketAddr,
    other: &'static str,
) -> SocketAddr {
    let l = TcpListener::bind(listen).expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            std::thread::spawn(move || {
                let Ok((head, body)) = read_request(&mut c) else {
                    return;
                };
                if head.contains("/woo/cancel/send/money") {
                    let _ = forward(upstream, &head, &body, Some(other));
                }
                if let Ok(resp) = forward(upstream, &head, &body, None) {
                    let _ = c.write_all(&resp);
                }
            });
        }
    });
    addr
}

/// Run `sql` on the batch's SQLite journal file directly (a row spoiled or changed under the
/// command, as a bad disk or a hand edit would): the number of rows it changed.
pub async fn journal_sql(s: &Sent, sql: &str) -> u64 {
    use sqlx::{ConnectOptions, Executor};
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(s.dir.join("journal.sqlite"))
        .connect()
        .await
        .expect("setup: open the journal");
    conn.execute(sqlx::AssertSqlSafe(sql.to_owned()))
        .await
        .expect("setup: change the journal")
        .rows_affected()
}
