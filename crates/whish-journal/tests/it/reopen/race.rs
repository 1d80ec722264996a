//! A request recorded as never sent (`refused`, `not-sent`) may be sent again, as a first send.
//! Two processes (two journal handles on one file) send the same never-sent requests at once. The
//! reopen takes an entry only while it is still recorded as never sent, and any other take only an
//! entry not refused: a refusal the other process recorded in between is never reopened and sent
//! again under the same Request-id.
//!
//! Truth: every send refused by the service is final for its Request-id; no Request-id reaches
//! the service twice once refused, and none is paid while a caller was told it was refused.
//! Both processes hold leases that cannot run out here: a lease that runs out while its send is
//! out lets another process resend under the same key, which is the spec's resend after a
//! timeout, not a reopen; the model checker explores that fault.

use std::collections::HashMap;

use crate::support::{cash_send, places, sandbox, transfer};
use whish_core::RequestId;
use whish_sandbox::{Endpoint, Fault};

const KEYS: i64 = 120;
const ROUNDS: i64 = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_never_reopened_as_a_never_sent_request() {
    let mut lies: Vec<String> = Vec::new();
    for place in places("reopen-race").await {
        for round in 0..ROUNDS {
            let sb = sandbox().await;
            let a = place.open_steady().await;
            let b = place.open_steady().await;
            let ta = a.transfer(transfer(&sb, 0));
            let tb = b.transfer(transfer(&sb, 0));
            let base = 9_100_000 + round * 10_000;
            let prepared: Vec<_> = (0..KEYS)
                .map(|i| {
                    ta.client()
                        .prepare_send(
                            cash_send(10).request_id(RequestId::new(base + i).expect("id")),
                        )
                        .expect("prepare")
                })
                .collect();
            // A stopped batch recorded them all as never sent.
            let recorded = ta
                .record_unsent(&prepared, "the batch stopped before these rows")
                .await
                .expect("record unsent");
            assert_eq!(recorded.len(), prepared.len());
            // The service refuses the first KEYS sends it receives (the account's balance
            // limit: nothing created, a new attempt needs a new Request-id).
            sb.inject(
                Endpoint::TransferSend,
                Fault::Code("transfer.account_reach_balance_limit"),
                KEYS as u32,
            );
            let mut tasks = tokio::task::JoinSet::new();
            for p in &prepared {
                for (who, t) in [("A", ta.clone()), ("B", tb.clone())] {
                    let p = p.clone();
                    tasks.spawn(async move {
                        let r = t.send(&p).await;
                        let said = match &r {
                            Ok(_) => "accepted".to_owned(),
                            Err(e) if e.outcome_unknown() => format!("unknown: {e}"),
                            Err(e) => format!(
                                "refused {}: {e}",
                                e.code().map(|c| c.to_string()).unwrap_or_default()
                            ),
                        };
                        (p.request_id().get(), who, said)
                    });
                }
            }
            let mut said: HashMap<i64, Vec<(String, String)>> = HashMap::new();
            while let Some(done) = tasks.join_next().await {
                let (id, who, s) = done.expect("join");
                said.entry(id).or_default().push((who.to_owned(), s));
            }
            a.flush().await;
            b.flush().await;
            // The sends the service received, per Request-id, in order.
            let mut received: HashMap<i64, Vec<Option<String>>> = HashMap::new();
            for r in sb.requests() {
                if r.endpoint != Endpoint::TransferSend {
                    continue;
                }
                let id = r
                    .headers
                    .iter()
                    .find_map(|h| {
                        let (n, v) = h.split_once(':')?;
                        n.trim()
                            .eq_ignore_ascii_case("request-id")
                            .then(|| v.trim().parse::<i64>().ok())
                            .flatten()
                    })
                    .unwrap_or_default();
                received.entry(id).or_default().push(r.fault.clone());
            }
            let paid: HashMap<i64, usize> =
                sb.transfers().iter().fold(HashMap::new(), |mut m, t| {
                    *m.entry(t.request_id).or_default() += 1;
                    m
                });
            for (id, got) in &received {
                let refused_then_sent_again =
                    got.len() > 1 && got[0].as_deref().is_some_and(|f| f.starts_with("code"));
                if refused_then_sent_again {
                    lies.push(format!(
                        "{place:?} round {round}: Request-id {id} was refused by the service and then sent again under the same Request-id ({got:?}); paid {} time(s); callers were told {:?}",
                        paid.get(id).copied().unwrap_or(0),
                        said.get(id)
                    ));
                }
            }
            for (id, n) in &paid {
                let told_refused = said
                    .get(id)
                    .is_some_and(|v| v.iter().any(|(_, s)| s.starts_with("refused")));
                if told_refused || *n > 1 {
                    lies.push(format!(
                        "{place:?} round {round}: Request-id {id} is paid {n} time(s), a caller was told refused: {:?}",
                        said.get(id)
                    ));
                }
            }
            eprintln!(
                "{place:?} round {round}: {} sends received, {} paid, {} faults left",
                received.values().map(Vec::len).sum::<usize>(),
                paid.len(),
                sb.queued_faults(Endpoint::TransferSend)
            );
            a.close().await;
            b.close().await;
        }
    }
    assert!(
        lies.is_empty(),
        "{} lies:\n{}",
        lies.len(),
        lies.iter().take(8).cloned().collect::<Vec<_>>().join("\n")
    );
}
