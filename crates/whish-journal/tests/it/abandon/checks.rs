//! `Journal::abandon`: a person's decision not to send an entry waiting for the operator,
//! closed only once the service shows the request never took effect. On a real SQLite file,
//! and on PostgreSQL when `WHISH_TEST_POSTGRES_URL` names a server.

use std::time::Duration;

use crate::support::{
    abandon_send, cash_send, entry_of, lost_and_applied_for_the_operator, places, sandbox,
    state_of, transfer, transfers_with,
};
use whish_journal::{ABANDONED, Abandoned, Clients, Operation, Recovery, Service, State};
use whish_sandbox::{Endpoint, Fault};

fn sends(sb: &whish_sandbox::Sandbox, after: usize) -> usize {
    sb.requests()
        .iter()
        .skip(after)
        .filter(|r| r.endpoint == Endpoint::TransferSend)
        .count()
}

/// A send the service never received is closed, and nothing ever sends it: not a retrying
/// recovery, not a send of the same request. One the service received is left as it was, and
/// is then confirmed by recovery. What is not waiting for the operator is left alone.
#[tokio::test]
async fn only_a_send_the_service_never_received_is_abandoned() {
    for place in places("abandon-send").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let (lost, applied) = lost_and_applied_for_the_operator(&sb, &journal, 80, 81).await;
        let clients = Clients::new().transfer(transfer(&sb, 0));
        let (lost_key, applied_key) = (
            lost.request_id().to_string(),
            applied.request_id().to_string(),
        );
        let before = sb.requests().len();

        let done = abandon_send(
            &journal,
            &clients,
            &lost_key,
            "the receiver was paid in cash at the office",
        )
        .await;
        assert!(
            matches!(&done, Abandoned::Recorded { checked } if checked.contains("no transfer")),
            "{done:?}"
        );
        let entry = entry_of(&journal, Service::MoneyTransfer, Operation::Send, &lost_key).await;
        assert_eq!(entry.state, State::Refused);
        let outcome = entry.outcome.expect("outcome");
        assert_eq!(outcome.result, ABANDONED);
        assert!(
            outcome
                .message
                .as_deref()
                .is_some_and(|m| m.contains("paid in cash at the office")),
            "{outcome:?}"
        );

        // The one the service holds: left for the operator, with what the service said.
        let done = abandon_send(&journal, &clients, &applied_key, "not wanted").await;
        assert!(
            matches!(&done, Abandoned::Received { status } if status.contains("SENT")),
            "{done:?}"
        );
        assert_eq!(
            state_of(
                &journal,
                Service::MoneyTransfer,
                Operation::Send,
                &applied_key
            )
            .await,
            State::NeedsOperator
        );
        assert_eq!(sends(&sb, before), 0, "abandon sends nothing");

        // A retrying recovery confirms the received one and never sends the abandoned one.
        let report = journal
            .recover(&clients, &Recovery::new().retry_needs_operator(true))
            .await
            .expect("recover");
        assert!(report.all_final(), "{report:?}");
        assert_eq!(sends(&sb, before), 0, "{report:?}");
        assert_eq!(transfers_with(&sb, lost.request_id().get()), 0);
        assert_eq!(transfers_with(&sb, applied.request_id().get()), 1);
        assert!(
            journal
                .list(&whish_journal::Listing::new().open())
                .await
                .expect("list")
                .is_empty()
        );
        // Sending the same request again through the journal is refused as final.
        let t = journal.transfer(transfer(&sb, 0));
        let again = t.send(&lost).await.expect_err("abandoned is final");
        assert!(again.to_string().contains("abandoned"), "{again}");
        assert_eq!(sends(&sb, before), 0, "nothing sent");

        // Final, unknown and open entries are not the operator's to abandon.
        let done = abandon_send(&journal, &clients, &lost_key, "twice").await;
        assert_eq!(
            done,
            Abandoned::NotWaiting {
                state: State::Refused
            }
        );
        let done = abandon_send(&journal, &clients, "12345", "none").await;
        assert_eq!(done, Abandoned::NoEntry);
        let open = t.client().prepare_send(cash_send(82)).expect("prepare");
        sb.inject(Endpoint::TransferSend, Fault::DropRequest, 1);
        assert!(t.send(&open).await.expect_err("dropped").outcome_unknown());
        let done = abandon_send(
            &journal,
            &clients,
            &open.request_id().to_string(),
            "too early",
        )
        .await;
        assert_eq!(
            done,
            Abandoned::NotWaiting {
                state: State::MayHaveArrived
            }
        );
    }
}

/// A status read that does not answer (a proxy's page, a dropped reply, the read's own
/// refusal), an activity log that cannot be read to confirm "not found", or no client to read
/// with: nothing changes, and a later read settles it. A status read that lies "not found"
/// for a transfer the service holds is caught by the activity log.
#[tokio::test]
async fn a_check_without_an_answer_abandons_nothing() {
    for place in places("abandon-no-answer").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let (lost, applied) = lost_and_applied_for_the_operator(&sb, &journal, 83, 84).await;
        let key = lost.request_id().to_string();
        let clients = Clients::new().transfer(transfer(&sb, 0));
        for fault in [
            Fault::Page(403),
            Fault::DropReply,
            Fault::Code("api.account.invalid_request"),
        ] {
            sb.inject(Endpoint::TransferStatus, fault, 1);
            let done = abandon_send(&journal, &clients, &key, "x").await;
            assert!(matches!(done, Abandoned::NoAnswer { .. }), "{done:?}");
            assert_eq!(
                state_of(&journal, Service::MoneyTransfer, Operation::Send, &key).await,
                State::NeedsOperator
            );
        }
        // "Not found", and the log cannot be read to confirm it.
        sb.inject(Endpoint::TransferActivity, Fault::Page(502), 1);
        let done = abandon_send(&journal, &clients, &key, "x").await;
        assert!(matches!(done, Abandoned::NoAnswer { .. }), "{done:?}");
        // The applied one, with a status read that lies "not found": the log lists it.
        let applied_key = applied.request_id().to_string();
        sb.inject(
            Endpoint::TransferStatus,
            Fault::Code("sending.transfer.invalid.info"),
            1,
        );
        let done = abandon_send(&journal, &clients, &applied_key, "x").await;
        assert!(
            matches!(&done, Abandoned::Received { status } if status.contains("activity log")),
            "{done:?}"
        );
        assert_eq!(
            state_of(
                &journal,
                Service::MoneyTransfer,
                Operation::Send,
                &applied_key
            )
            .await,
            State::NeedsOperator
        );
        let done = journal
            .abandon(
                &Clients::new(),
                Service::MoneyTransfer,
                Operation::Send,
                &key,
                "x",
            )
            .await
            .expect("abandon");
        assert!(matches!(done, Abandoned::Unchecked { .. }), "{done:?}");
        // The lease taken for the check was given back: the next check settles it at once.
        let done = abandon_send(&journal, &clients, &key, "x").await;
        assert!(matches!(done, Abandoned::Recorded { .. }), "{done:?}");
        assert_eq!(transfers_with(&sb, lost.request_id().get()), 0);
    }
}

/// A cancel: closed when the transfer is not cancelled (the cancel never applied), left as it
/// was when it is (the cancel applied).
#[tokio::test]
async fn a_cancel_is_abandoned_only_when_the_transfer_is_not_cancelled() {
    for place in places("abandon-cancel").await {
        let sb = sandbox().await;
        let journal = place.open().await;
        let t = journal.transfer(transfer(&sb, 0));
        let mut cancels = Vec::new();
        for (n, fault) in [(0, Fault::DropRequest), (1, Fault::DropReply)] {
            let sent = t
                .send(&t.client().prepare_send(cash_send(90 + n)).expect("prepare"))
                .await
                .expect("sent");
            let cancel = t
                .client()
                .prepare_cancel(sent.ltn_number().expect("ltn"), None)
                .expect("prepare");
            sb.inject(Endpoint::TransferCancel, fault, 1);
            assert!(t.cancel(&cancel).await.expect_err("lost").outcome_unknown());
            cancels.push(cancel);
        }
        let clients = Clients::new().transfer(transfer(&sb, 0));
        let report = journal
            .recover(&clients, &Recovery::new().deadline(Duration::ZERO))
            .await
            .expect("recover");
        assert_eq!(report.needs_operator, 2, "setup: {report:?}");
        let before = sb.requests().len();

        let never = journal
            .abandon(
                &clients,
                Service::MoneyTransfer,
                Operation::Cancel,
                &cancels[0].request_id().to_string(),
                "the receiver will collect after all",
            )
            .await
            .expect("abandon");
        assert!(
            matches!(&never, Abandoned::Recorded { checked } if checked.contains("not cancelled")),
            "{never:?}"
        );
        let applied = journal
            .abandon(
                &clients,
                Service::MoneyTransfer,
                Operation::Cancel,
                &cancels[1].request_id().to_string(),
                "too late",
            )
            .await
            .expect("abandon");
        assert!(
            matches!(&applied, Abandoned::Received { status } if status.contains("cancelled")),
            "{applied:?}"
        );
        assert_eq!(
            state_of(
                &journal,
                Service::MoneyTransfer,
                Operation::Cancel,
                &cancels[1].request_id().to_string()
            )
            .await,
            State::NeedsOperator
        );
        let cancel_calls = sb
            .requests()
            .iter()
            .skip(before)
            .filter(|r| r.endpoint == Endpoint::TransferCancel)
            .count();
        assert_eq!(cancel_calls, 0, "abandon sends nothing");
        // The retry settles the applied one and never sends the abandoned one.
        let report = journal
            .recover(&clients, &Recovery::new().retry_needs_operator(true))
            .await
            .expect("recover");
        assert!(report.all_final(), "{report:?}");
        let cancel_calls = sb
            .requests()
            .iter()
            .skip(before)
            .filter(|r| r.endpoint == Endpoint::TransferCancel)
            .count();
        assert_eq!(cancel_calls, 0, "{report:?}");
    }
}
