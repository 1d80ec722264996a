//! `whish reconcile ...`: the journal against the service's own records, with a documented exit
//! status (0 everything matches, 6 something does not).

use std::path::Path;

use crate::printed;
use whish::payouts::reconcile::{self, TransferReport};
use whish::transfer::ReportRange;

use crate::cli::ReconcileCmd;
use crate::output::{self, DIFFERENCES, Done, OK, usage};
use crate::settings::Ctx;

fn utc(v: &str, flag: &str) -> Result<time::OffsetDateTime, u8> {
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    time::PrimitiveDateTime::parse(v.trim(), &format)
        .map(time::PrimitiveDateTime::assume_utc)
        .map_err(|e| usage(format!("--{flag}: {e} (yyyy-MM-dd HH:mm:ss)")))
}

pub async fn run(ctx: &Ctx, cmd: ReconcileCmd) -> Done {
    match cmd {
        ReconcileCmd::Collect {
            from,
            to,
            look_back_days,
        } => {
            let (start, end) = (utc(&from, "from")?, utc(&to, "to")?);
            let client = ctx.collect()?;
            let journal = ctx.journal().await?;
            let look_back = time::Duration::days(i64::from(look_back_days));
            let report = reconcile::collect_looking_back(&journal, &client, start, end, look_back)
                .await
                .map_err(|e| usage(e.to_string()))?;
            ctx.out.print(&printed::CollectReconciled {
                matches: report.is_clean(),
                currencies: report
                    .currencies
                    .iter()
                    .map(|(code, t)| {
                        let total = printed::CollectTotal {
                            created: t.created,
                            created_amount: output::money(code, t.created_amount),
                            paid: t.paid,
                            paid_amount: output::money(code, t.paid_amount),
                            refunded: t.refunded,
                            refunded_amount: output::money(code, t.refunded_amount),
                            pending: t.pending,
                            failed: t.failed,
                        };
                        (code.as_str(), total)
                    })
                    .collect(),
                findings: report
                    .findings
                    .iter()
                    .map(|f| printed::CollectFinding {
                        kind: f.kind.as_str(),
                        currency: &f.currency,
                        external_id: &f.external_id,
                        message: &f.message,
                    })
                    .collect(),
                earlier_checked: report.earlier_checked,
            });
            Ok(if report.is_clean() { OK } else { DIFFERENCES })
        }
        ReconcileCmd::Transfer { from, to, csv } => {
            let range = ReportRange::starting(&from)
                .and_then(|s| s.until(&to))
                .map_err(usage)?;
            let (start, end) = (utc(&from, "from")?, utc(&to, "to")?);
            let client = ctx.transfer()?;
            let journal = ctx.journal().await?;
            let report = reconcile::transfers(&journal, &client, &range, start, end)
                .await
                .map_err(|e| match e {
                    reconcile::ReconcileError::Service(e) => output::error(&ctx.out, &e),
                    other => usage(other.to_string()),
                })?;
            if let Some(path) = csv {
                write_csv(&path, &report)
                    .map_err(|e| usage(format!("cannot write {}: {e}", path.display())))?;
            }
            print(ctx, &report);
            if report.is_clean() {
                Ok(OK)
            } else {
                eprintln!(
                    "whish: {} difference(s) over {} transfer(s): see `findings`",
                    report.findings.len(),
                    report.flagged().len()
                );
                Ok(DIFFERENCES)
            }
        }
    }
}

fn print(ctx: &Ctx, r: &TransferReport) {
    let money = |code: &str, v| output::money(code, v);
    ctx.out.print(&printed::TransferReconciled {
        matches: r.is_clean(),
        journal_sends: r.journal_sends,
        currencies: r
            .currencies
            .iter()
            .map(|(code, t)| {
                let total = printed::TransferTotal {
                    sent: t.sent,
                    sent_amount: money(code, t.sent_amount),
                    fees: money(code, t.fees),
                    collected: t.collected,
                    cancelled: t.cancelled,
                    cancelled_amount: money(code, t.cancelled_amount),
                    refunded: money(code, t.refunded),
                    matched: t.matched,
                    opening_balance: t.opening_balance.map(|b| money(code, b)),
                    closing_balance: t.closing_balance.map(|b| money(code, b)),
                    statement_lines: t.statement_lines,
                };
                (code.as_str(), total)
            })
            .collect(),
        findings: r
            .findings
            .iter()
            .map(|f| printed::TransferFinding {
                kind: f.kind.as_str(),
                currency: &f.currency,
                request_id: f.request_id.map(|i| i.get()),
                transfer_id: f.transfer_id.as_deref(),
                journal: f.journal.as_deref(),
                service: f.service.as_deref(),
                message: &f.message,
            })
            .collect(),
        cancellations: r.cancellations.len(),
        sent_after_range: r.sent_after_range.iter().map(|i| i.get()).collect(),
    });
}

/// One table: a `total` line per currency, then a `finding` line per difference; each column
/// is empty where it does not apply.
fn write_csv(path: &Path, r: &TransferReport) -> std::io::Result<()> {
    let mut f = csv::Writer::from_path(path)?;
    let opt = |code: &str, v: Option<whish::Decimal>| {
        v.map(|b| output::money(code, b)).unwrap_or_default()
    };
    f.write_record([
        "record",
        "currency",
        "kind",
        "request_id",
        "transfer_id",
        "journal",
        "service",
        "sent",
        "sent_amount",
        "fees",
        "collected",
        "cancelled",
        "cancelled_amount",
        "refunded",
        "matched",
        "opening_balance",
        "closing_balance",
        "message",
    ])?;
    for (code, t) in &r.currencies {
        f.write_record([
            "total".to_owned(),
            code.clone(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            t.sent.to_string(),
            output::money(code, t.sent_amount),
            output::money(code, t.fees),
            t.collected.to_string(),
            t.cancelled.to_string(),
            output::money(code, t.cancelled_amount),
            output::money(code, t.refunded),
            t.matched.to_string(),
            opt(code, t.opening_balance),
            opt(code, t.closing_balance),
            String::new(),
        ])?;
    }
    for x in &r.findings {
        let mut record = vec![
            "finding".to_owned(),
            x.currency.clone(),
            x.kind.to_string(),
            x.request_id.map(|i| i.to_string()).unwrap_or_default(),
            x.transfer_id.clone().unwrap_or_default(),
            x.journal.clone().unwrap_or_default(),
            x.service.clone().unwrap_or_default(),
        ];
        record.extend(std::iter::repeat_n(String::new(), 10));
        record.push(x.message.clone());
        f.write_record(&record)?;
    }
    f.flush()
}
