//! `whish journal ...`: list, show and recover the journal's entries.

use std::time::Duration;

use whish::journal::{Abandoned, Clients, Entry, Journal, Recovery, RecoveryReport};

use crate::cli::JournalCmd;
use crate::output::{self, Done, NOT_SENT, OK, PENDING, REFUSED, UNKNOWN, printable, usage};
use crate::printed;
use crate::settings::Ctx;

fn line(e: &Entry) -> printed::EntryLine<'_> {
    printed::EntryLine {
        key: &e.key,
        service: e.service,
        operation: e.operation,
        state: e.state,
        created: output::rfc3339(e.created),
    }
}

fn inbox_line(e: &Entry) -> printed::InboxLine<'_> {
    printed::InboxLine {
        key: &e.key,
        state: e.state,
        attempts: e.attempts,
        last_error: e.outcome.as_ref().and_then(|o| o.message.as_deref()),
        recorded: output::rfc3339(e.created),
    }
}

/// A `--deadline-hours` value: how long after it was recorded an entry may stay open before
/// recovery sends it to the operator.
pub(crate) fn deadline(hours: f64) -> Result<Duration, u8> {
    if !(hours.is_finite() && hours >= 0.0) {
        return Err(usage(
            "--deadline-hours must be a number of hours, 0 or more",
        ));
    }
    Duration::try_from_secs_f64(hours * 3600.0).map_err(|e| usage(format!("--deadline-hours: {e}")))
}

/// A `--since` time: `yyyy-MM-dd`, `yyyy-MM-dd HH:mm:ss` (UTC) or RFC 3339.
fn since_time(text: &str) -> Result<time::OffsetDateTime, u8> {
    use time::format_description::well_known::Rfc3339;
    use time::macros::format_description;
    let t = text.trim();
    if let Ok(at) = time::OffsetDateTime::parse(t, &Rfc3339) {
        return Ok(at);
    }
    if let Ok(at) = time::PrimitiveDateTime::parse(
        t,
        format_description!("[year]-[month]-[day] [hour]:[minute]:[second]"),
    ) {
        return Ok(at.assume_utc());
    }
    if let Ok(day) = time::Date::parse(t, format_description!("[year]-[month]-[day]")) {
        return Ok(day.midnight().assume_utc());
    }
    Err(usage(format!(
        "--since `{}` is not a time: yyyy-MM-dd, yyyy-MM-dd HH:mm:ss (UTC) or RFC 3339",
        printable(t)
    )))
}

pub async fn run(ctx: &Ctx, cmd: JournalCmd) -> Done {
    let journal = ctx.journal().await?;
    match cmd {
        JournalCmd::List {
            open,
            state,
            since,
            limit,
        } => list(ctx, &journal, open, state, since, limit).await,
        JournalCmd::Inbox { limit } => inbox(ctx, &journal, limit).await,
        JournalCmd::HandOn { key } => hand_on(ctx, &journal, key).await,
        JournalCmd::Show { key } => show(ctx, &journal, key).await,
        JournalCmd::Abandon {
            key,
            reason,
            adopt_untargeted,
        } => abandon(ctx, &journal, key, reason, adopt_untargeted).await,
        JournalCmd::Recover {
            keys,
            deadline_hours,
            take_over,
            retry_needs_operator,
            adopt_untargeted,
        } => {
            recover(
                ctx,
                &journal,
                keys,
                deadline_hours,
                take_over,
                retry_needs_operator,
                adopt_untargeted,
            )
            .await
        }
    }
}

/// A journal that failed to answer: nothing was sent by this command.
fn failed(e: whish::journal::JournalError) -> u8 {
    usage(format!("journal: {e}"))
}

/// A journal that failed during a recovery, which may have sent requests before: never "nothing
/// was sent".
fn recovery_failed(e: whish::journal::JournalError) -> u8 {
    eprintln!(
        "whish: journal: {}; recovery stopped: the entries it worked on before may have been sent; run `whish journal recover` again",
        printable(&e.to_string())
    );
    UNKNOWN
}

/// `journal list`: the entries, filtered, and the rows that cannot be read.
async fn list(
    ctx: &Ctx,
    journal: &Journal,
    open: bool,
    state: Option<String>,
    since: Option<String>,
    limit: u32,
) -> Done {
    let mut listing = whish::journal::Listing::new().limit(limit);
    if open {
        listing = listing.open();
    }
    if let Some(text) = state {
        let Some(st) = whish::journal::State::parse(text.trim()) else {
            let names: Vec<&str> = whish::journal::State::ALL
                .iter()
                .map(|s| s.as_str())
                .collect();
            return Err(usage(format!(
                "--state `{}` is not a state: {}",
                printable(&text),
                names.join(", ")
            )));
        };
        listing = listing.state(st);
    }
    if let Some(text) = since {
        listing = listing.since(since_time(&text)?);
    }
    let (entries, unreadable) = journal
        .list_with_unreadable(&listing)
        .await
        .map_err(failed)?;
    let rows: Vec<printed::ListedLine<'_>> = entries
        .iter()
        .map(|e| printed::ListedLine::Entry(line(e)))
        .chain(unreadable.iter().map(|u| {
            printed::ListedLine::Unreadable(printed::UnreadableLine {
                key: &u.key,
                id: u.id,
                state: "unreadable",
                reason: &u.reason,
            })
        }))
        .collect();
    print_rows(ctx, &rows)
}

/// Rows as JSON lines with `--json` (one entry a line, for grep and jq), else one array.
fn print_rows(ctx: &Ctx, rows: &[impl serde::Serialize]) -> Done {
    if ctx.out.json {
        for r in rows {
            ctx.out.line(r);
        }
    } else {
        ctx.out.print(&rows);
    }
    Ok(OK)
}

/// `journal inbox`: the callback changes waiting for a worker or escalated.
async fn inbox(ctx: &Ctx, journal: &Journal, limit: u32) -> Done {
    let mut entries = Vec::new();
    for state in [
        whish::journal::State::Waiting,
        whish::journal::State::Escalated,
    ] {
        let listing = whish::journal::Listing::new().state(state).limit(limit);
        let mut found = journal.list(&listing).await.map_err(failed)?;
        found.retain(|e| e.operation == whish::journal::Operation::Callback);
        entries.extend(found);
    }
    let rows: Vec<_> = entries.iter().map(inbox_line).collect();
    print_rows(ctx, &rows)
}

/// `journal hand-on`: hand an escalated inbox change on again.
async fn hand_on(ctx: &Ctx, journal: &Journal, key: String) -> Done {
    let service = if key.starts_with("transfer:") {
        whish::journal::Service::MoneyTransfer
    } else {
        whish::journal::Service::HostedCollect
    };
    if journal.hand_on_again(service, &key).await.map_err(failed)? {
        return Ok(ctx.out.success(&printed::HandedOn {
            key: &key,
            state: "waiting",
        }));
    }
    match journal.change(service, &key).await.map_err(failed)? {
        None => Err(usage(format!(
            "no inbox change has the key `{}`",
            printable(&key)
        ))),
        Some(c) if c.state == whish::journal::State::HandedOn => Err(usage(format!(
            "`{}` was handed on already",
            printable(&key)
        ))),
        Some(_) => {
            eprintln!(
                "whish: a worker holds `{}` now; try again when its lease is over",
                printable(&key)
            );
            Ok(PENDING)
        }
    }
}

/// `journal show`: every entry with the key, its request body included.
async fn show(ctx: &Ctx, journal: &Journal, key: String) -> Done {
    let entries = journal.find(&key).await.map_err(failed)?;
    if entries.is_empty() {
        return Err(usage(format!(
            "no journal entry has the key `{}`",
            printable(&key)
        )));
    }
    // The entry as the journal serializes it, its request body shown as the JSON it holds.
    let shown: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| {
            let mut v = crate::output::value(e);
            v["request"] = serde_json::from_slice(&e.request)
                .unwrap_or_else(|_| serde_json::Value::from(String::from_utf8_lossy(&e.request)));
            v
        })
        .collect();
    Ok(ctx.out.success(&shown))
}

/// `journal abandon`: record a person's decision not to send an entry waiting for the
/// operator, once the service confirms it never received it.
async fn abandon(
    ctx: &Ctx,
    journal: &Journal,
    key: String,
    reason: String,
    adopt_untargeted: bool,
) -> Done {
    if reason.trim().is_empty() {
        return Err(usage("--reason must say why the entry is not to be sent"));
    }
    let waiting: Vec<Entry> = journal
        .find(&key)
        .await
        .map_err(failed)?
        .into_iter()
        .filter(|e| e.state == whish::journal::State::NeedsOperator)
        .collect();
    let entry = match waiting.as_slice() {
        [one] => one,
        [] => {
            return Err(usage(format!(
                "no entry with the key `{}` waits for the operator (`whish journal show` says where it is; an open one is recovery's to settle)",
                printable(&key)
            )));
        }
        _ => {
            return Err(usage(format!(
                "{} entries with the key `{}` wait for the operator: abandon them through the library, naming the service and operation",
                waiting.len(),
                printable(&key)
            )));
        }
    };
    let mut clients = Clients::new().adopt_untargeted(adopt_untargeted);
    if let Some(c) = ctx.transfer_quiet() {
        clients = clients.transfer(c);
    }
    let done = journal
        .abandon(
            &clients,
            entry.service,
            entry.operation,
            &entry.key,
            &reason,
        )
        .await
        .map_err(failed)?;
    let (outcome, said, code) = match &done {
        Abandoned::Recorded { checked } => ("abandoned", checked.clone(), OK),
        Abandoned::Received { status } => ("received", status.clone(), REFUSED),
        Abandoned::NoAnswer { why } => ("no-answer", why.clone(), UNKNOWN),
        Abandoned::HeldElsewhere { holder } => (
            "held-elsewhere",
            format!(
                "another process ({}) holds the entry now: it is settling or sending it; try again once it is done",
                holder
            ),
            PENDING,
        ),
        Abandoned::Unchecked { why } => ("unchecked", why.clone(), NOT_SENT),
        Abandoned::NotWaiting { state } => {
            ("not-waiting", format!("the entry is {state} now"), NOT_SENT)
        }
        // Found just above; gone meanwhile (pruned).
        _ => ("not-waiting", "the entry is gone".to_owned(), NOT_SENT),
    };
    ctx.out.print(&printed::AbandonDone {
        key: &entry.key,
        service: entry.service,
        operation: entry.operation,
        outcome,
        message: &said,
    });
    match done {
        Abandoned::Recorded { .. } => {}
        Abandoned::Received { .. } if entry.operation == whish::journal::Operation::Send => {
            eprintln!(
                "whish: not abandoned: {}. Settle it with `whish journal recover --retry-needs-operator --deadline-hours H` (it is confirmed, not sent again), then cancel the transfer if it must not be paid",
                printable(&said)
            )
        }
        Abandoned::Received { .. } => eprintln!(
            "whish: not abandoned: {}. Settle it with `whish journal recover --retry-needs-operator --deadline-hours H`, which records it",
            printable(&said)
        ),
        _ => eprintln!(
            "whish: not abandoned, nothing changed: {}",
            printable(&said)
        ),
    }
    Ok(code)
}

/// `journal recover`: settle the open entries (all, or the ones named) with the clients whose
/// settings are there.
async fn recover(
    ctx: &Ctx,
    journal: &Journal,
    keys: Vec<String>,
    deadline_hours: f64,
    take_over: bool,
    retry_needs_operator: bool,
    adopt_untargeted: bool,
) -> Done {
    let deadline = deadline(deadline_hours)?;
    // The entries named, every one of them found before anything is sent.
    let mut named = Vec::new();
    for key in &keys {
        let found = journal.find(key).await.map_err(failed)?;
        if found.is_empty() {
            return Err(usage(format!(
                "no journal entry has the key `{}`: nothing was recovered",
                printable(key)
            )));
        }
        named.extend(found);
    }
    // A client for every service whose settings are there; the entries of the others
    // stay open, and the command says which settings were missing.
    let mut clients = Clients::new().adopt_untargeted(adopt_untargeted);
    let mut missing = Vec::new();
    match ctx.transfer_quiet() {
        Some(c) => clients = clients.transfer(c),
        None => missing.push("money-transfer (WHISH_TRANSFER_*)"),
    }
    match ctx.collect_quiet() {
        Some(c) => clients = clients.collect(c),
        None => missing.push("hosted-collect (WHISH_COLLECT_*)"),
    }
    match ctx.topup_quiet() {
        Some(c) => clients = clients.topup(c),
        None => missing.push("intl-topup (WHISH_TOPUP_*)"),
    }
    let options = Recovery::new()
        .deadline(deadline)
        .take_over(take_over)
        .retry_needs_operator(retry_needs_operator);
    let (report, open) = if keys.is_empty() {
        let report = journal
            .recover(&clients, &options)
            .await
            .map_err(recovery_failed)?;
        let open = journal
            .list(&whish::journal::Listing::new().open().limit(u32::MAX))
            .await
            .map_err(recovery_failed)?;
        (report, open)
    } else {
        let entries: Vec<_> = named
            .iter()
            .map(|e| (e.service, e.operation, e.key.as_str()))
            .collect();
        let report = journal
            .recover_entries(&clients, &options, &entries)
            .await
            .map_err(recovery_failed)?;
        // The named entries as they are now: those not final yet.
        let mut open = Vec::new();
        for key in &keys {
            open.extend(
                journal
                    .find(key)
                    .await
                    .map_err(recovery_failed)?
                    .into_iter()
                    .filter(|e| !e.state.is_final()),
            );
        }
        (report, open)
    };
    ctx.out.print(&printed::Recovered {
        report: &report,
        open: open.iter().map(line).collect(),
    });
    tell_left_open(&report, &missing);
    Ok(if report.unreachable > 0 || !report.unrecorded.is_empty() {
        eprintln!(
            "whish: {} entries could not reach their service; run recover again",
            report.unreachable
        );
        UNKNOWN
    } else if !report.held_elsewhere.is_empty()
        || !report.unreadable.is_empty()
        || !report.other_service.is_empty()
    {
        PENDING
    } else if !open.is_empty() {
        let operator = open
            .iter()
            .filter(|e| e.state == whish::journal::State::NeedsOperator)
            .count();
        eprintln!(
            "whish: {} entries are still open ({} pending at the service, {} waiting for an operator): `whish journal list --open`",
            open.len(),
            open.len() - operator,
            operator
        );
        PENDING
    } else {
        OK
    })
}

/// Say on stderr what a recovery left open and why, entry by entry.
fn tell_left_open(report: &RecoveryReport, missing: &[&str]) {
    if report.skipped > 0 {
        eprintln!(
            "whish: {} entries were left open: no settings for {}",
            report.skipped,
            missing.join(", ")
        );
    }
    for h in &report.held_elsewhere {
        eprintln!(
            "whish: {} {} {} ({}) is held by another process ({}) until {}: it is sending it now, or it died; run recover again after that time, or with --take-over once you know that process is gone",
            h.service,
            h.operation,
            printable(&h.key),
            h.state,
            printable(&h.owner),
            output::rfc3339(h.until).unwrap_or_default()
        );
    }
    for o in &report.other_service {
        eprintln!(
            "whish: {} {} {} ({}) was recorded for another service ({}); these settings send to {}: left as it is, nothing sent; recover it with that service's settings (an entry written before 0.4: --adopt-untargeted, once you know it is this service's)",
            o.service,
            o.operation,
            printable(&o.key),
            o.state,
            printable(&o.recorded),
            printable(&o.current)
        );
    }
    if report.taken_from_dead > 0 {
        eprintln!(
            "whish: {} entries held by a process of this host that is gone were taken over",
            report.taken_from_dead
        );
    }
    for u in &report.unreadable {
        eprintln!(
            "whish: journal row {} (key {}) cannot be read: {}; nothing was sent for it",
            u.id,
            printable(&u.key),
            printable(&u.reason)
        );
    }
    for c in &report.unrecorded {
        eprintln!(
            "whish: {} {} {}: {} (sent or asked by this recovery), but the journal could not record it; run recover again",
            c.service,
            c.operation,
            printable(&c.key),
            c.outcome.result
        );
    }
}
