//! A journal opened on one runtime (a start-up helper's current-thread runtime, kept but idle) and
//! used from another. Its writer task lives on the first runtime, and every accepted send hands its
//! outcome to the writer: the next read of the journal, a flush and a close must still finish.

use std::time::Duration;

use crate::support::{LEASE, cash_send, places, sandbox, transfer};
use whish_journal::{Journal, Operation, Service};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_after_a_send_hangs_when_the_journal_was_opened_on_an_idle_runtime() {
    let place = places("adv-hang").await.remove(0);
    let url = place.url().to_owned();
    // Opened by a helper on its own current-thread runtime, which stays alive but idle.
    let (tx, rx) = std::sync::mpsc::channel::<Journal>();
    let (keep_tx, keep_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let j = rt.block_on(async {
            Journal::builder(&url)
                .lease(LEASE)
                .open()
                .await
                .expect("open")
        });
        tx.send(j).expect("hand over");
        let _ = keep_rx.recv(); // the runtime lives on, idle
        drop(rt);
    });
    let journal = rx.recv().expect("journal");
    let sb = sandbox().await;
    let t = journal.transfer(transfer(&sb, 0));
    let p = t.client().prepare_send(cash_send(12)).expect("prepare");
    let _ = t.send(&p).await.expect("accepted");
    let read = tokio::time::timeout(
        Duration::from_secs(5),
        journal.entry(
            Service::MoneyTransfer,
            Operation::Send,
            &p.request_id().to_string(),
        ),
    )
    .await;
    eprintln!("read: {read:?}");
    let flushed = tokio::time::timeout(Duration::from_secs(5), journal.flush()).await;
    eprintln!("flush: {flushed:?}");
    let _ = keep_tx.send(());
    assert!(read.is_ok(), "Journal::entry hung after an accepted send");
    assert!(
        flushed.is_ok(),
        "Journal::flush hung after an accepted send"
    );
}
