//! A rewriting proxy in front of the sandbox, and the day of a paid batch behind it, for the
//! reconciliation tests that make the service's records disagree with the journal.
#![allow(dead_code, unused_imports)]

use super::*;

pub use std::io::Read;
pub use std::net::{SocketAddr, TcpListener, TcpStream};
pub use std::str::FromStr;
pub use std::sync::{Arc, Mutex};

pub use serde_json::Value;
pub use time::OffsetDateTime;
pub use time::macros::format_description;
pub use whish_money_transfer::ReportRange;
pub use whish_payouts::reconcile::{self, FindingKind, TransferReport};

pub type Rewrite = Arc<dyn Fn(&str, &mut Value) + Send + Sync>;

#[derive(Clone, Default)]
pub struct Rewriter(pub Arc<Mutex<Option<Rewrite>>>);

impl Rewriter {
    pub fn set(&self, f: impl Fn(&str, &mut Value) + Send + Sync + 'static) {
        *self.0.lock().unwrap() = Some(Arc::new(f));
    }
    pub fn get(&self) -> Option<Rewrite> {
        self.0.lock().unwrap().clone()
    }
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

pub fn content_length(head: &str) -> Option<usize> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse().ok())?
    })
}

pub fn read_head(s: &mut TcpStream) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).into_owned();
            let rest = buf[i + 4..].to_vec();
            return Ok(Some((head, rest)));
        }
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

pub fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(i) = find(body, b"\r\n") {
        let size_text = String::from_utf8_lossy(&body[..i]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("0").trim(), 16)
            .unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = i + 2;
        out.extend_from_slice(&body[start..start + size]);
        body = &body[start + size + 2..];
    }
    out
}

pub fn serve(mut c: TcpStream, upstream: SocketAddr, rw: Rewriter) -> std::io::Result<()> {
    let Some((head, mut body)) = read_head(&mut c)? else {
        return Ok(());
    };
    let want = content_length(&head).unwrap_or(0);
    while body.len() < want {
        let mut chunk = [0u8; 8192];
        let n = c.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let path = head
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    let mut out_head = String::new();
    for (i, l) in head.split("\r\n").enumerate() {
        if i > 0 && l.to_ascii_lowercase().starts_with("connection:") {
            continue;
        }
        out_head.push_str(l);
        out_head.push_str("\r\n");
    }
    out_head.push_str("Connection: close\r\n\r\n");
    let mut u = TcpStream::connect(upstream)?;
    u.write_all(out_head.as_bytes())?;
    u.write_all(&body)?;
    let mut resp = Vec::new();
    u.read_to_end(&mut resp)?;
    let Some(i) = find(&resp, b"\r\n\r\n") else {
        c.write_all(&resp)?;
        return Ok(());
    };
    let rhead = String::from_utf8_lossy(&resp[..i]).into_owned();
    let mut rbody = resp[i + 4..].to_vec();
    if rhead
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        rbody = dechunk(&rbody);
    }
    if let Some(f) = rw.get()
        && (path.ends_with("/woo/activity") || path.ends_with("/woo/statement"))
        && let Ok(mut v) = serde_json::from_slice::<Value>(&rbody)
    {
        f(&path, &mut v);
        rbody = serde_json::to_vec(&v).expect("json");
    }
    let mut h = String::new();
    for (i, l) in rhead.split("\r\n").enumerate() {
        let low = l.to_ascii_lowercase();
        if i > 0
            && (low.starts_with("content-length:")
                || low.starts_with("transfer-encoding:")
                || low.starts_with("connection:"))
        {
            continue;
        }
        h.push_str(l);
        h.push_str("\r\n");
    }
    h.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        rbody.len()
    ));
    c.write_all(h.as_bytes())?;
    c.write_all(&rbody)?;
    c.flush()
}

pub fn proxy(upstream: SocketAddr, rw: Rewriter) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            let rw = rw.clone();
            std::thread::spawn(move || {
                let _ = serve(s, upstream, rw);
            });
        }
    });
    addr
}

/// A client of the sandbox through a proxy whose rewrite of the activity log and the statement
/// the test sets.
pub fn proxied(sb: &Sandbox) -> (TransferClient, Rewriter) {
    let rw = Rewriter::default();
    let addr = proxy(sb.addr(), rw.clone());
    let base = sb
        .transfer_base_url()
        .replace(&sb.addr().to_string(), &addr.to_string());
    let cr = sb.transfer_credentials();
    (client_at(&base, &cr.username, &cr.key), rw)
}

pub fn list(v: &mut Value) -> &mut Vec<Value> {
    v.pointer_mut("/data/list")
        .and_then(Value::as_array_mut)
        .expect("data.list")
}

pub fn dec(v: &Value) -> Decimal {
    match v {
        Value::Number(n) => Decimal::from_str(&n.to_string())
            .or_else(|_| Decimal::from_scientific(&n.to_string()))
            .expect("decimal"),
        Value::String(s) => Decimal::from_str(s).expect("decimal"),
        _ => Decimal::ZERO,
    }
}

pub fn num(d: Decimal) -> Value {
    use rust_decimal::prelude::ToPrimitive;
    Value::from(d.normalize().to_f64().expect("f64"))
}

/// Recompute each line's balance after the first (balance = previous + debit - credit), as a
/// service whose book really holds these lines would state them.
pub fn rebalance(entry: &mut Value) {
    let lines = entry
        .get_mut("transactions")
        .and_then(Value::as_array_mut)
        .expect("transactions");
    for i in 1..lines.len() {
        let prev = dec(&lines[i - 1]["balance"]);
        let b = prev + dec(&lines[i]["debit"]) - dec(&lines[i]["credit"]);
        lines[i]["balance"] = num(b);
    }
}

pub fn statement_of<'a>(v: &'a mut Value, currency: &str) -> &'a mut Value {
    list(v)
        .iter_mut()
        .find(|e| e["currentBalance"]["currency"] == currency)
        .expect("statement entry of the currency")
}

pub fn range(from: OffsetDateTime, to: OffsetDateTime) -> ReportRange {
    let f = format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    ReportRange::starting(&from.format(&f).expect("format"))
        .expect("from")
        .until(&to.format(&f).expect("format"))
        .expect("to")
}

pub struct Day {
    pub sb: Sandbox,
    pub c: TransferClient,
    pub rw: Rewriter,
    pub j: Journal,
    pub batch: Batch,
    pub from: OffsetDateTime,
    pub rows: Vec<RowResult>,
}

/// A batch of `n` rows of `amount` USD paid through the proxy (nothing rewritten yet).
pub async fn paid_batch(test: &str, n: usize, amount: &str) -> Day {
    paid_batch_at(test, n, amount, 2).await
}

/// [`paid_batch`], one row at a time: the rows are paid in the file's order.
pub async fn paid_batch_in_order(test: &str, n: usize, amount: &str) -> Day {
    paid_batch_at(test, n, amount, 1).await
}

pub async fn paid_batch_at(test: &str, n: usize, amount: &str, in_flight: usize) -> Day {
    let d = dir(test);
    let sb = sandbox(1_000_000).await;
    let (c, rw) = proxied(&sb);
    let file = d.join("aid.csv");
    write(&file, &csv_rows(n, amount));
    let batch = Batch::new(format!("adv-{test}"), &file, defaults()).expect("batch");
    let j = journal(&d).await;
    let from = OffsetDateTime::now_utc() - time::Duration::hours(1);
    let (s, rows) = run(&batch, &j, &c, &RunOptions::new().concurrency(in_flight)).await;
    let s = s.expect("run");
    assert!(s.all_accepted(), "setup: every row paid: {rows:?}");
    Day {
        sb,
        c,
        rw,
        j,
        batch,
        from,
        rows,
    }
}

pub async fn reconcile_now(day: &Day) -> TransferReport {
    let to = OffsetDateTime::now_utc() + time::Duration::hours(1);
    reconcile::transfers(&day.j, &day.c, &range(day.from, to), day.from, to)
        .await
        .expect("reconcile")
}

pub async fn clean_baseline(day: &Day) {
    let report = reconcile_now(day).await;
    assert!(
        report.is_clean(),
        "setup: before any rewrite the reconciliation is clean: {:#?}",
        report.findings
    );
}

pub fn request_ids(day_rows: &[RowResult]) -> Vec<i64> {
    day_rows
        .iter()
        .filter_map(|r| r.request_id.map(|i| i.get()))
        .collect()
}

pub fn service_date(t: OffsetDateTime) -> String {
    let f = format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    t.format(&f).expect("format")
}

pub async fn reconcile_between(
    day: &Day,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> TransferReport {
    reconcile::transfers(&day.j, &day.c, &range(from, to), from, to)
        .await
        .expect("reconcile")
}

/// Cancel every uncollected transfer of the batch; the Request-ids cancelled.
pub async fn cancel_all(day: &Day) -> Vec<i64> {
    let far = OffsetDateTime::now_utc() + time::Duration::hours(1);
    let mut rows = Vec::new();
    day.batch
        .cancel_uncollected(&day.j, &day.c, far, "not collected", 1, &mut |r| {
            rows.push(r.clone());
            Ok(())
        })
        .await
        .expect("cancel");
    rows.iter()
        .filter(|r| r.cancelled_now)
        .filter_map(|r| r.request_id.map(|i| i.get()))
        .collect()
}

pub fn usd_lines(v: &mut Value) -> &mut Vec<Value> {
    statement_of(v, "USD")["transactions"]
        .as_array_mut()
        .expect("lines")
}

pub fn row_of(day: &Day, request_id: i64) -> &RowResult {
    day.rows
        .iter()
        .find(|r| r.request_id.map(|i| i.get()) == Some(request_id))
        .expect("row")
}
