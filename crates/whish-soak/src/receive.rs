//! The soak's callbacks travel the receiver an integrator deploys (`whish::callbacks`): the
//! transfer callbacks signed by the sandbox, the collect GET callbacks read back through status.
//! Afterwards every collected transfer and every paid link must have been handed on exactly once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use whish::callbacks::{HandlerError, PaymentUpdate, Receiver, TransferNotification};
use whish::collect::{CollectClient, CollectStatus};
use whish::transfer::callback::SignedInput;
use whish_sandbox::Sandbox;

/// How many times each (subject, status) reached the handlers.
#[derive(Debug, Default)]
pub struct Handed {
    transfers: Mutex<HashMap<(String, String), usize>>,
    payments: Mutex<HashMap<(String, String), usize>>,
}

fn bump(m: &Mutex<HashMap<(String, String), usize>>, key: (String, String)) {
    *m.lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(key)
        .or_default() += 1;
}

/// The receiver on a loopback port; its base URL.
pub async fn start(
    sb: &Sandbox,
    collect: CollectClient,
) -> Result<(String, Arc<Handed>, Receiver), String> {
    let handed = Arc::new(Handed::default());
    let key = sb.callback_key().to_vec();
    let verifier = move |i: &SignedInput<'_>| {
        whish_sandbox::callback::verify_signature(&key, i.timestamp, i.body, i.signature)
    };
    let (t, p) = (handed.clone(), handed.clone());
    let receiver = Receiver::builder()
        .transfer(verifier, move |n: TransferNotification| {
            bump(&t.transfers, (n.transfer_id.clone(), n.status.to_string()));
            std::future::ready(Ok::<(), HandlerError>(()))
        })
        .collect(collect, move |u: PaymentUpdate| {
            bump(
                &p.payments,
                (
                    u.external_id.to_string(),
                    u.status.collect_status.to_string(),
                ),
            );
            std::future::ready(Ok::<(), HandlerError>(()))
        })
        .max_in_flight(256)
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot start the callback receiver: {e}"))?;
    let base = format!(
        "http://{}",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    let serving = receiver.clone();
    tokio::spawn(async move {
        let _ = serving
            .serve(listener, whish::callbacks::ServeLimits::new())
            .await;
    });
    Ok((base, handed, receiver))
}

/// The check: every transfer the sandbox shows RECEIVED was handed on once as RECEIVED, every
/// paid link once as paid (or refunded, when the refund came before the status read), and
/// nothing twice. Waits for the background handlers first.
pub async fn check(sb: &Sandbox, handed: &Handed, receiver: &Receiver) -> Result<String, String> {
    let received: Vec<String> = sb
        .transfers()
        .into_iter()
        .filter(|t| t.status == "RECEIVED" && t.payment_mode == "CASH_COLLECTION")
        .map(|t| t.transfer_id)
        .collect();
    let paid: Vec<String> = sb
        .payments()
        .into_iter()
        .filter(|p| p.collect_status == "success" || p.collect_status == "refunded")
        .map(|p| p.external_id)
        .collect();
    let seen = |m: &Mutex<HashMap<(String, String), usize>>| {
        m.lock().unwrap_or_else(|p| p.into_inner()).clone()
    };
    let paid_status = [
        CollectStatus::Success.to_string(),
        CollectStatus::Refunded.to_string(),
    ];
    let missing = |t: &HashMap<_, usize>, p: &HashMap<(String, String), usize>| {
        let transfers = received
            .iter()
            .filter(|id| !t.contains_key(&((*id).clone(), "RECEIVED".to_owned())))
            .count();
        let payments = paid
            .iter()
            .filter(|id| {
                !paid_status
                    .iter()
                    .any(|s| p.contains_key(&((*id).clone(), s.clone())))
            })
            .count();
        transfers + payments
    };
    for _ in 0..200 {
        if missing(&seen(&handed.transfers), &seen(&handed.payments)) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    receiver.shutdown().await;
    let (t, p) = (seen(&handed.transfers), seen(&handed.payments));
    let twice = t.values().chain(p.values()).filter(|n| **n > 1).count();
    let lost = missing(&t, &p);
    let line = format!(
        "callbacks through whish::callbacks: {} collected transfers and {} paid links in the sandbox; {} transfer notifications and {} payment updates handed on, {lost} missing, {twice} handed on twice",
        received.len(),
        paid.len(),
        t.len(),
        p.len()
    );
    if lost == 0 && twice == 0 {
        Ok(line)
    } else {
        Err(line)
    }
}
