//! No change is lost: every callback is recorded before its 200, and a recorded change is
//! handed on whatever fails after (the inbox's write, the handler, the worker's process, the
//! request's deadline).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use whish_callbacks::{
    ChangeState, HandlerError, InMemory, Inbox, PaymentUpdate, Receiver, RetrySettings,
    TransferNotification,
};
use whish_money_transfer::callback::SignedInput;

use crate::support::{Flaky, collect_client_at, eventually, get, post_signed, transfer_body};

fn quick_retry() -> RetrySettings {
    RetrySettings::default().backoff(Duration::from_millis(20), Duration::from_millis(40))
}

fn any_signature(_: &SignedInput<'_>) -> bool {
    true
}

/// A handler counting its calls; it fails (or panics) on the calls `fail_on` says.
fn counting(
    fail_on: impl Fn(usize) -> Option<bool> + Send + Sync + 'static,
) -> (
    Arc<AtomicUsize>,
    impl Fn(TransferNotification) -> std::future::Ready<Result<(), HandlerError>>
    + Send
    + Sync
    + 'static,
) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let handler = move |_: TransferNotification| {
        let n = counted.fetch_add(1, Ordering::SeqCst);
        match fail_on(n) {
            Some(true) => panic!("the integrator's handler panicked"),
            Some(false) => std::future::ready(Err("the handler's database is down".into())),
            None => std::future::ready(Ok(())),
        }
    };
    (calls, handler)
}

/// While the inbox cannot be written (a full disk, a database that is down), every callback is
/// answered 503, a collect GET too: no 200 is decided by a check. Once it can, the redelivery
/// is recorded and handed on.
#[tokio::test]
async fn a_callback_is_not_acknowledged_while_the_inbox_cannot_be_written() {
    let inbox = Flaky::default();
    inbox.down.store(true, Ordering::SeqCst);
    let (calls, handler) = counting(|_| None);
    let receiver = Receiver::builder()
        .transfer(any_signature, handler)
        .collect(
            collect_client_at("http://127.0.0.1:9"),
            |_: PaymentUpdate| async { Ok::<(), HandlerError>(()) },
        )
        .inbox(inbox.clone())
        .build();
    let router = receiver.router();
    let uri = format!(
        "{}?externalId=order-1&currency=USD",
        whish_callbacks::SUCCESS_PATH
    );
    let body = transfer_body("TRF1", 1);
    assert_eq!(get(&router, &uri).await, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        post_signed(&router, &body).await,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert!(inbox.inner.is_empty());
    inbox.down.store(false, Ordering::SeqCst);
    assert_eq!(get(&router, &uri).await, StatusCode::OK);
    assert_eq!(post_signed(&router, &body).await, StatusCode::OK);
    eventually("handed on", || calls.load(Ordering::SeqCst) == 1).await;
    assert_eq!(
        inbox
            .inner
            .state("signal:success:USD:order-1")
            .await
            .expect("state"),
        Some(ChangeState::Waiting),
        "the signal is recorded; its status read (a closed port) is tried again"
    );
    receiver.shutdown().await;
}

/// A handler that fails, panics or runs out of time is tried again after the backoff, with no
/// redelivery and no poller, until it takes the change; the timed-out call is stopped, not
/// left running beside the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_panicking_or_hanging_handler_is_tried_again_until_it_takes_the_change() {
    let finished_late = Arc::new(AtomicBool::new(false));
    let late = finished_late.clone();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let handler = move |_: TransferNotification| {
        let n = counted.fetch_add(1, Ordering::SeqCst);
        let late = late.clone();
        async move {
            match n {
                0 => Err::<(), HandlerError>("the handler's database is down".into()),
                1 => panic!("the integrator's handler panicked"),
                2 => {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    late.store(true, Ordering::SeqCst);
                    Ok(())
                }
                _ => Ok(()),
            }
        }
    };
    let inbox = InMemory::default();
    let receiver = Receiver::builder()
        .transfer(any_signature, handler)
        .inbox(inbox.clone())
        .handler_timeout(Duration::from_millis(200))
        .retry(quick_retry())
        .pump_interval(Duration::from_millis(20))
        .build();
    let router = receiver.router();
    assert_eq!(
        post_signed(&router, &transfer_body("TRF1", 42)).await,
        StatusCode::OK
    );
    eventually("handed on", || {
        state_now(&inbox, "transfer:TRF1:RECEIVED") == Some(ChangeState::HandedOn)
    })
    .await;
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(
        !finished_late.load(Ordering::SeqCst),
        "the call that ran out of time was stopped"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 4, "nothing handed on after");
    receiver.shutdown().await;
}

/// Where a change stands in an in-memory inbox, read without awaiting.
fn state_now(inbox: &InMemory, key: &str) -> Option<ChangeState> {
    let fut = inbox.state(key);
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut fut = fut;
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(Ok(state)) => state,
        _ => None,
    }
}

/// Past the deadline a change that keeps failing waits for a person, and is not tried again.
#[tokio::test]
async fn a_change_that_fails_past_the_deadline_waits_for_a_person() {
    let (calls, handler) = counting(|_| Some(false));
    let inbox = InMemory::default();
    let receiver = Receiver::builder()
        .transfer(any_signature, handler)
        .inbox(inbox.clone())
        // Long enough that the first failure is marked inside it on a loaded machine.
        .retry(quick_retry().deadline(Duration::from_secs(1)))
        .pump_interval(Duration::from_millis(20))
        .build();
    let router = receiver.router();
    assert_eq!(
        post_signed(&router, &transfer_body("TRF2", 43)).await,
        StatusCode::OK
    );
    eventually("left to a person", || {
        state_now(&inbox, "transfer:TRF2:RECEIVED") == Some(ChangeState::Escalated)
    })
    .await;
    let tried = calls.load(Ordering::SeqCst);
    assert!(tried >= 2, "{tried}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(calls.load(Ordering::SeqCst), tried);
    receiver.shutdown().await;
}

/// A request deadline that fires while the record is being written answers 408, and the
/// change is recorded all the same and handed on once: the redelivery is told it is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_deadline_during_the_record_loses_nothing() {
    let inbox = Flaky::default();
    inbox.slow_ms.store(400, Ordering::SeqCst);
    let (calls, handler) = counting(|_| None);
    let receiver = Receiver::builder()
        .transfer(any_signature, handler)
        .inbox(inbox.clone())
        .request_timeout(Duration::from_millis(100))
        .build();
    let router = receiver.router();
    let body = transfer_body("TRF3", 44);
    assert_eq!(
        post_signed(&router, &body).await,
        StatusCode::REQUEST_TIMEOUT
    );
    eventually("handed on", || calls.load(Ordering::SeqCst) == 1).await;
    inbox.slow_ms.store(0, Ordering::SeqCst);
    assert_eq!(post_signed(&router, &body).await, StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    receiver.shutdown().await;
}

/// A replay of a change recorded lately is answered 200 before it takes a slot or a write:
/// thousands of copies of one signed callback leave the slots to new changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_callback_takes_no_slot_and_no_write() {
    let inbox = Flaky::default();
    let (calls, handler) = counting(|_| None);
    let receiver = Receiver::builder()
        .transfer(any_signature, handler)
        .inbox(inbox.clone())
        .max_in_flight(1)
        .build();
    let router = receiver.router();
    let body = transfer_body("TRF4", 45);
    assert_eq!(post_signed(&router, &body).await, StatusCode::OK);
    // The inbox is now slow to write: a write in flight holds the one slot for 300 ms.
    inbox.slow_ms.store(300, Ordering::SeqCst);
    let new = {
        let router = router.clone();
        tokio::spawn(async move { post_signed(&router, &transfer_body("TRF5", 46)).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Meanwhile the replays are answered at once, and no write is asked for.
    inbox.down.store(true, Ordering::SeqCst);
    for _ in 0..200 {
        assert_eq!(post_signed(&router, &body).await, StatusCode::OK);
    }
    inbox.down.store(false, Ordering::SeqCst);
    assert_eq!(new.await.expect("joined"), StatusCode::OK);
    eventually("both handed on", || calls.load(Ordering::SeqCst) == 2).await;
    receiver.shutdown().await;
}

/// With the journal as the inbox, a receiver whose process dies while its handler runs (its
/// heartbeat stops with it) leaves the change to its lease: another receiver on the same
/// journal hands it on once the lease is over, and a redelivery in between is told it is
/// recorded.
#[cfg(feature = "journal")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_held_by_a_killed_receiver_is_handed_on_by_another() {
    let dir = std::env::temp_dir().join(format!(
        "whish-callbacks-killed-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_nanos()
    ));
    let url = format!("sqlite:{}", dir.join("j.sqlite").display());
    let open = || {
        whish_journal::Journal::builder(url.clone())
            // Renewed every third of it: no stall of a loaded machine skips a whole period.
            .lease(Duration::from_secs(2))
            .open()
    };
    // The first receiver runs on a runtime of its own: dropping it is the process's death
    // (every task gone at once, the heartbeat with them).
    let started = Arc::new(AtomicBool::new(false));
    let dying = {
        let started = started.clone();
        let journal = open().await.expect("journal");
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let receiver = Receiver::builder()
                    .transfer(any_signature, move |_: TransferNotification| {
                        started.store(true, Ordering::SeqCst);
                        std::future::pending::<Result<(), HandlerError>>()
                    })
                    .inbox(journal)
                    .build();
                let router = receiver.router();
                assert_eq!(
                    post_signed(&router, &transfer_body("TRF6", 47)).await,
                    StatusCode::OK
                );
                for _ in 0..500 {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            });
            rt.shutdown_background();
        })
    };
    eventually("the first handler runs", || started.load(Ordering::SeqCst)).await;
    let (calls, handler) = counting(|_| None);
    let other = Receiver::builder()
        .transfer(any_signature, handler)
        .inbox(open().await.expect("journal"))
        .pump_interval(Duration::from_millis(50))
        .build();
    let router = other.router();
    // While the first still lives (and renews its lease), nothing is handed on twice.
    assert_eq!(
        post_signed(&router, &transfer_body("TRF6", 47)).await,
        StatusCode::OK
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the first holds its lease");
    dying.join().expect("the first receiver's thread");
    eventually("handed on by the other", || {
        calls.load(Ordering::SeqCst) == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    other.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// With the journal as the inbox and its SQLite file gone (deleted under the process), a
/// collect GET is answered 503: the change cannot be recorded, so the service delivers again.
#[cfg(feature = "journal")]
#[tokio::test]
async fn a_collect_callback_with_the_journal_gone_is_not_acknowledged() {
    let dir = std::env::temp_dir().join(format!(
        "whish-callbacks-gone-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_nanos()
    ));
    let url = format!("sqlite:{}", dir.join("j.sqlite").display());
    let journal = whish_journal::Journal::open(&url).await.expect("journal");
    let receiver = Receiver::builder()
        .collect(
            collect_client_at("http://127.0.0.1:9"),
            |_: PaymentUpdate| async { Ok::<(), HandlerError>(()) },
        )
        .inbox(journal)
        .build();
    let router = receiver.router();
    let uri = |id: &str| {
        format!(
            "{}?externalId={id}&currency=USD",
            whish_callbacks::SUCCESS_PATH
        )
    };
    assert_eq!(get(&router, &uri("order-2")).await, StatusCode::OK);
    std::fs::remove_dir_all(&dir).expect("delete the journal");
    assert_eq!(
        get(&router, &uri("order-3")).await,
        StatusCode::SERVICE_UNAVAILABLE
    );
    receiver.shutdown().await;
}

/// Calls per transfer id.
type Calls = Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>;
/// A boxed transfer handler.
type Boxed = Box<
    dyn Fn(
            TransferNotification,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), HandlerError>> + Send>>
        + Send
        + Sync,
>;

/// A handler counting its calls and how many run at once; each call sleeps `ms(call)` first.
fn timed(ms: impl Fn(&str) -> u64 + Send + Sync + 'static) -> (Calls, Arc<AtomicUsize>, Boxed) {
    let calls: Calls = Arc::default();
    let overlap = Arc::new(AtomicUsize::new(0));
    let running: Arc<std::sync::Mutex<std::collections::HashSet<String>>> = Arc::default();
    let (c, o) = (calls.clone(), overlap.clone());
    let handler = move |n: TransferNotification| {
        let (c, o, running) = (c.clone(), o.clone(), running.clone());
        let wait = ms(&n.transfer_id);
        Box::pin(async move {
            *c.lock()
                .expect("l")
                .entry(n.transfer_id.clone())
                .or_default() += 1;
            if !running.lock().expect("l").insert(n.transfer_id.clone()) {
                o.fetch_add(1, Ordering::SeqCst);
            }
            tokio::time::sleep(Duration::from_millis(wait)).await;
            running.lock().expect("l").remove(&n.transfer_id);
            Ok::<(), HandlerError>(())
        }) as std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send>>
    };
    (calls, overlap, Box::new(handler))
}

/// A change recorded while every worker is busy waits for one; if its lease ran out meanwhile
/// and another worker took it, the waiting copy runs nothing: each change runs once, never two
/// at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_whose_lease_ran_out_while_it_waited_for_a_worker_runs_once() {
    // The A handlers outlast B's lease by more than a second (their own leases are renewed
    // every third of one, with room for a loaded machine's stalls).
    let (calls, overlap, handler) = timed(|id| if id.starts_with('A') { 2500 } else { 50 });
    let receiver = Receiver::builder()
        .transfer(any_signature, handler)
        .inbox(InMemory::new(Duration::from_secs(1)))
        .max_in_flight(2)
        .pump_interval(Duration::from_millis(20))
        .build();
    let router = receiver.router();
    for (id, n) in [("A1", 1), ("A2", 2), ("B", 3)] {
        assert_eq!(
            post_signed(&router, &transfer_body(id, n)).await,
            StatusCode::OK
        );
    }
    eventually("B handed on", || calls.lock().expect("l").contains_key("B")).await;
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let calls = calls.lock().expect("l").clone();
    assert_eq!(calls.values().copied().max(), Some(1), "{calls:?}");
    assert_eq!(overlap.load(Ordering::SeqCst), 0);
    receiver.shutdown().await;
}

/// When the lease cannot be renewed for most of a lease (the inbox unreachable), the handler
/// is stopped: another worker may take the change, and the two must never run at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_that_cannot_be_renewed_stops_the_handler_before_another_may_run_it() {
    let inbox = Flaky::with_lease(Duration::from_millis(300));
    inbox.renew_down.store(true, Ordering::SeqCst);
    let (calls, overlap, handler) = timed(|_| 800);
    let receiver = Receiver::builder()
        .transfer(any_signature, handler)
        .inbox(inbox.clone())
        .retry(quick_retry())
        .pump_interval(Duration::from_millis(20))
        .build();
    let router = receiver.router();
    assert_eq!(
        post_signed(&router, &transfer_body("C", 5)).await,
        StatusCode::OK
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        overlap.load(Ordering::SeqCst),
        0,
        "{:?}",
        calls.lock().expect("l")
    );
    inbox.renew_down.store(false, Ordering::SeqCst);
    receiver.shutdown().await;
}

/// A mark that fails once is written again while the lease is still held: the change is not
/// handed on a second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mark_that_fails_once_is_written_again_and_nothing_runs_twice() {
    let inbox = Flaky::with_lease(Duration::from_secs(1));
    inbox.mark_failures.store(1, Ordering::SeqCst);
    let (calls, handler) = counting(|_| None);
    let receiver = Receiver::builder()
        .transfer(any_signature, handler)
        .inbox(inbox.clone())
        .pump_interval(Duration::from_millis(20))
        .build();
    let router = receiver.router();
    assert_eq!(
        post_signed(&router, &transfer_body("D", 6)).await,
        StatusCode::OK
    );
    eventually("marked", || {
        state_now(&inbox.inner, "transfer:D:RECEIVED") == Some(ChangeState::HandedOn)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    receiver.shutdown().await;
}

/// A handler blocked in synchronous code past the handler timeout cannot be aborted: its next
/// try waits until it has returned, so the two never run at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_handler_blocked_past_its_timeout_is_waited_for_before_the_next_try() {
    let calls = Arc::new(AtomicUsize::new(0));
    let overlap = Arc::new(AtomicUsize::new(0));
    let running = Arc::new(AtomicBool::new(false));
    let (c, o, r) = (calls.clone(), overlap.clone(), running.clone());
    let handler = move |_: TransferNotification| {
        let n = c.fetch_add(1, Ordering::SeqCst);
        let (o, r) = (o.clone(), r.clone());
        async move {
            if r.swap(true, Ordering::SeqCst) {
                o.fetch_add(1, Ordering::SeqCst);
            }
            if n == 0 {
                std::thread::sleep(Duration::from_millis(1000));
            }
            r.store(false, Ordering::SeqCst);
            if n == 0 {
                // Returned to the runtime after its timeout: aborted here.
                tokio::task::yield_now().await;
            }
            Ok::<(), HandlerError>(())
        }
    };
    let receiver = Receiver::builder()
        .transfer(any_signature, handler)
        .handler_timeout(Duration::from_millis(200))
        .retry(quick_retry())
        .pump_interval(Duration::from_millis(20))
        .build();
    let router = receiver.router();
    assert_eq!(
        post_signed(&router, &transfer_body("E", 8)).await,
        StatusCode::OK
    );
    eventually("tried again", || calls.load(Ordering::SeqCst) >= 2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(overlap.load(Ordering::SeqCst), 0);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    receiver.shutdown().await;
}
