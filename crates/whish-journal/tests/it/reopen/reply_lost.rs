//! PostgreSQL: a send of a request recorded as never
//! sent (`refused`, `not-sent`: given back unsent) reopens its entry (`take_lease_as` with
//! `reopen`: back to `intended`, leased to this process). When that UPDATE commits but its
//! answer is lost (the connection cut after the commit), `hold` answers `record(...)`:
//! "nothing was sent". But the entry is now open (`intended`), so a recovery sends the request:
//! it reaches the service after the caller was told it never would.
//!
//! Needs `WHISH_TEST_POSTGRES_URL` (`scripts/postgres-throwaway.sh start`); says so (and fails
//! under CI) without it. A TCP proxy in front of the server drops the reply to the reopening UPDATE.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::support::{LEASE, Place, cash_send, places, sandbox, transfer, transfers_with};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use whish_journal::{Clients, Journal, Operation, Recovery, Service, State, Unreserved};

/// A proxy to `upstream`: once `armed`, the first client message holding `needle` has its
/// server reply swallowed up to ReadyForQuery (so the server has committed), and the
/// connection is then cut.
async fn proxy(upstream: String, needle: &'static [u8], armed: Arc<AtomicBool>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            let Ok(server) = TcpStream::connect(&upstream).await else {
                continue;
            };
            let armed = armed.clone();
            tokio::spawn(async move {
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let hit = Arc::new(AtomicBool::new(false));
                let hit2 = hit.clone();
                let up = tokio::spawn(async move {
                    let mut buf = vec![0u8; 65536];
                    loop {
                        let n = match cr.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        if armed.load(Ordering::SeqCst)
                            && buf[..n].windows(needle.len()).any(|w| w == needle)
                        {
                            armed.store(false, Ordering::SeqCst);
                            hit2.store(true, Ordering::SeqCst);
                            eprintln!("proxy: reply to the reopen will be lost");
                        }
                        if sw.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                });
                let mut buf = vec![0u8; 65536];
                let mut swallowed = Vec::new();
                loop {
                    let n = match sr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    // The statement's prepare is answered first (forwarded); its execution's
                    // answer (`UPDATE 1`, then ReadyForQuery after the commit) is swallowed.
                    if hit.load(Ordering::SeqCst) {
                        swallowed.extend_from_slice(&buf[..n]);
                        let executed = swallowed.windows(9).any(|w| w == b"UPDATE 1\0");
                        if executed {
                            if let Some(i) = swallowed.windows(9).position(|w| w == b"UPDATE 1\0")
                                && swallowed[i..].windows(5).any(|w| w == b"Z\0\0\0\x05")
                            {
                                eprintln!("proxy: the server committed; cutting the connection");
                                break;
                            }
                            continue;
                        }
                        if cw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                        swallowed.clear();
                        continue;
                    }
                    if cw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
                up.abort();
                let _ = cw.shutdown().await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reopen_whose_reply_is_lost_is_told_nothing_sent_and_then_sent_by_recovery() {
    let Some(Place::Postgres(url)) = places("pg-reopen").await.into_iter().nth(1) else {
        eprintln!("a_reopen_whose_reply_is_lost NOT RUN: no PostgreSQL server");
        return;
    };
    let sb = sandbox().await;
    // Given back unsent: `refused`, `not-sent`.
    let direct = Journal::builder(&url)
        .lease(LEASE)
        .open()
        .await
        .expect("open");
    let t = direct.transfer(transfer(&sb, 0));
    let p = t.client().prepare_send(cash_send(44)).expect("prepare");
    let key = p.request_id().to_string();
    let r = t.reserve(vec![p.clone()]).await.pop().expect("one");
    assert_eq!(
        t.unreserve(r).await.expect("given back"),
        Unreserved::NeverSent
    );

    // Another process, through the proxy, sends it: its reopen commits, the answer is lost.
    let (hostport, rest) = {
        let after = url.split_once('@').expect("user@host").1;
        after.split_once('/').expect("host/db")
    };
    let armed = Arc::new(AtomicBool::new(false));
    let port = proxy(
        hostport.to_owned(),
        b"SET state = 'intended', outcome = NULL",
        armed.clone(),
    )
    .await;
    let via = url.replace(hostport, &format!("127.0.0.1:{port}"));
    let _ = rest;
    let b = Journal::builder(&via)
        .lease(LEASE)
        .open()
        .await
        .expect("open via proxy");
    let tb = b.transfer(transfer(&sb, 0));
    armed.store(true, Ordering::SeqCst);
    let answer = tb.send(&p).await;
    eprintln!("send: {answer:?}");
    let e = support::entry_of(&direct, Service::MoneyTransfer, Operation::Send, &key).await;
    eprintln!("journal: {:?} {:?}", e.state, e.outcome);
    assert_eq!(
        transfers_with(&sb, p.request_id().get()),
        0,
        "setup: not sent by this call"
    );
    let told_nothing_sent = matches!(&answer, Err(err) if err.nothing_sent());

    // A recovery (here a third process, after the lease) reads the journal.
    tokio::time::sleep(LEASE * 3).await;
    let c = Journal::builder(&url)
        .lease(LEASE)
        .open()
        .await
        .expect("open");
    let report = c
        .recover(&Clients::new().transfer(transfer(&sb, 0)), &Recovery::new())
        .await
        .expect("recover");
    eprintln!("recovery: {report:?}");
    let sent_later = transfers_with(&sb, p.request_id().get());
    let e2 = support::entry_of(&c, Service::MoneyTransfer, Operation::Send, &key).await;
    eprintln!("journal after recovery: {:?} {:?}", e2.state, e2.outcome);
    assert!(
        !(told_nothing_sent && (sent_later > 0 || e.state != State::Refused)),
        "LIE: the send was told `nothing was sent` ({answer:?}) while its entry was left {:?} \
         (open); a recovery then sent it: the service holds {sent_later} transfer(s) under it",
        e.state
    );
    c.close().await;
    b.close().await;
    direct.close().await;
}
