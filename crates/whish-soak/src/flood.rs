//! The receiver under a flood, measured: a receiver served with the default `ServeLimits` in a
//! child process, then
//! 1. N half-sent heads held open at once: the child's resident memory before and after;
//! 2. a reconnecting slowloris of N connections (each sends half a head, stalls, and reconnects
//!    as soon as it is closed) while 50 genuine signed callbacks arrive one after another: how
//!    many are answered, and how many within 5 s.
//!
//! `whish-soak --slowloris N` (the issue's figures: N = 1 100 reconnecting, 1 000 half-sent
//! heads held); the child is `whish-soak flood-child PORT`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use whish::callbacks::{HandlerError, Receiver, ServeLimits, TransferNotification};
use whish::transfer::callback::SignedInput;

/// The child: a receiver with the defaults, every signature taken (the flood is what is
/// measured, not the verifier).
pub async fn child(args: &[String]) -> Result<(), String> {
    let [port] = args else {
        return Err("flood-child PORT".into());
    };
    let port: u16 = port.parse().map_err(|e| format!("{port}: {e}"))?;
    let receiver = Receiver::builder()
        .transfer(
            |_: &SignedInput<'_>| true,
            |_: TransferNotification| async { Ok::<(), HandlerError>(()) },
        )
        .build();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| format!("cannot listen on {port}: {e}"))?;
    receiver
        .serve(listener, ServeLimits::new())
        .await
        .map_err(|e| e.to_string())
}

/// Resident memory of `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

const HALF_HEAD: &[u8] = b"POST /whish/transfer HTTP/1.1\r\nHost: x\r\ntimestamp: 1";

fn genuine(i: usize) -> Vec<u8> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let body = format!(
        r#"{{"date":"2026-11-27 10:00:00","externalId":{},"transferId":"FLOOD{i}","status":"RECEIVED"}}"#,
        i + 1
    );
    format!(
        "POST /whish/transfer HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ntimestamp: {now}\r\nsignature: c2lnbmF0dXJl\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// One genuine callback: the status line of its answer, if any came.
async fn ask(addr: std::net::SocketAddr, i: usize) -> Option<String> {
    let mut s = TcpStream::connect(addr).await.ok()?;
    s.write_all(&genuine(i)).await.ok()?;
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .map(str::to_owned)
}

pub async fn parent(n: usize) -> Result<bool, String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = tokio::process::Command::new(exe)
        .args(["flood-child", &port.port().to_string()])
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start the receiver: {e}"))?;
    let pid = child.id().unwrap_or(0);
    let addr = port;
    let started = Instant::now();
    while TcpStream::connect(addr).await.is_err() {
        if started.elapsed() > Duration::from_secs(10) {
            return Err("the receiver did not start".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    println!(
        "whish receiver flood: {n} connections against a receiver with the default limits (1 024 connections, 8 KiB heads, 200 ms grace)"
    );

    // 1. Half-sent heads held open (at most the cap is admitted; the rest wait in the backlog).
    let held = n.min(1000);
    let before = rss_kib(pid);
    let mut open = Vec::with_capacity(held);
    for _ in 0..held {
        if let Ok(mut s) = TcpStream::connect(addr).await
            && s.write_all(HALF_HEAD).await.is_ok()
        {
            open.push(s);
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let during = rss_kib(pid);
    drop(open);
    let memory_ok = during < 64 * 1024;
    println!(
        "{held} half-sent heads held: the receiver's resident memory {:.1} MiB (before {:.1} MiB, {:+.1} MiB)",
        during as f64 / 1024.0,
        before as f64 / 1024.0,
        (during as f64 - before as f64) / 1024.0
    );
    tokio::time::sleep(Duration::from_millis(500)).await;

    // 2. A reconnecting slowloris and 50 genuine callbacks.
    let stop = Arc::new(AtomicBool::new(false));
    let mut attackers = Vec::with_capacity(n);
    for _ in 0..n {
        let stop = stop.clone();
        attackers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let Ok(mut s) = TcpStream::connect(addr).await else {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                };
                if s.write_all(HALF_HEAD).await.is_err() {
                    continue;
                }
                let mut buf = [0u8; 64];
                let _ = s.read(&mut buf).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (mut answered, mut in_time, mut slowest) = (0, 0, Duration::ZERO);
    for i in 0..50 {
        let t = Instant::now();
        let line = tokio::time::timeout(Duration::from_secs(30), ask(addr, i)).await;
        let took = t.elapsed();
        if matches!(&line, Ok(Some(l)) if l.starts_with("HTTP/1.1 200")) {
            answered += 1;
            if took <= Duration::from_secs(5) {
                in_time += 1;
            }
            slowest = slowest.max(took);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for a in attackers {
        a.abort();
    }
    let _ = child.kill().await;
    println!(
        "a reconnecting slowloris of {n}: {answered} of 50 genuine callbacks answered 200, {in_time} within 5 s (slowest {} ms)",
        slowest.as_millis()
    );
    let ok = memory_ok && in_time >= 49;
    if !ok {
        println!("FAILED: the bar is 49 of 50 within 5 s, and under 64 MiB held");
    }
    Ok(ok)
}
