//! `whish collect ...`.

use crate::printed;
use whish::ExternalId;
use whish::collect::{CollectUrls, NewPayment};

use crate::cli::CollectCmd;
use crate::output::{self, Done, usage};
use crate::settings::Ctx;
use crate::transfer::{amount, currency};

pub fn external_id(x: Option<String>) -> Result<Option<ExternalId>, u8> {
    x.map(|v| ExternalId::new(v).map_err(usage)).transpose()
}

pub async fn run(ctx: &Ctx, cmd: CollectCmd) -> Done {
    let out = ctx.out;
    let client = ctx.collect()?;
    let report = |e: &whish::collect::Error| output::error(&out, e);
    let read_failed = |e: &whish::collect::Error| output::read_failed(&out, e);
    match cmd {
        CollectCmd::Balance { currency: c } => {
            let b = client
                .balance(currency(c))
                .await
                .map_err(|e| read_failed(&e))?;
            Ok(out.success(&printed::CollectBalance {
                balance: &b.balance,
                currency: &b.currency,
            }))
        }
        CollectCmd::Create {
            amount: a,
            currency: c,
            external_id: x,
            success_callback_url,
            failure_callback_url,
            success_redirect_url,
            failure_redirect_url,
            invoice,
        } => {
            let urls = CollectUrls::new(
                whish::collect::SuccessCallbackUrl::new(&success_callback_url).map_err(usage)?,
                whish::collect::FailureCallbackUrl::new(&failure_callback_url).map_err(usage)?,
                whish::collect::SuccessRedirectUrl::new(&success_redirect_url).map_err(usage)?,
                whish::collect::FailureRedirectUrl::new(&failure_redirect_url).map_err(usage)?,
            );
            let mut p = NewPayment::new(amount(&a)?, currency(c), urls);
            if let Some(i) = invoice {
                p = p.invoice(i);
            }
            if let Some(x) = external_id(x)? {
                p = p.external_id(x);
            }
            let prepared = client.prepare_payment(p).map_err(|e| report(&e))?;
            let journal = ctx.journal().await?;
            eprintln!(
                "whish: externalId {}: store it with the order; status and refund need it",
                prepared.external_id()
            );
            let created = journal
                .collect(client)
                .create_payment(&prepared)
                .await
                .map_err(|e| report(&e))?;
            Ok(out.success(&printed::PaymentCreated {
                outcome: "accepted",
                external_id: &created.external_id,
                collect_url: &created.collect_url,
                retrieved: created.retrieved,
                dialog: created.dialog.as_ref(),
            }))
        }
        CollectCmd::Status {
            currency: c,
            external_id: x,
        } => {
            let id = ExternalId::new(x).map_err(usage)?;
            let s = client
                .status(currency(c), &id)
                .await
                .map_err(|e| read_failed(&e))?;
            Ok(out.success(&printed::PaymentStatus {
                collect_status: &s.collect_status,
                payer_phone_number: s.payer_phone_number.as_deref(),
            }))
        }
        CollectCmd::Refund {
            currency: c,
            external_id: x,
            reason,
        } => {
            let id = ExternalId::new(x).map_err(usage)?;
            let prepared = client
                .prepare_refund(currency(c), &id, reason.as_deref())
                .map_err(|e| report(&e))?;
            let journal = ctx.journal().await?;
            let r = journal
                .collect(client)
                .refund(&prepared)
                .await
                .map_err(|e| report(&e))?;
            Ok(out.success(&printed::Refunded {
                outcome: "accepted",
                external_id: &r.external_id,
                retrieved: r.retrieved,
                dialog: r.dialog.as_ref(),
            }))
        }
    }
}
