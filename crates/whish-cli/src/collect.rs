//! `whish collect ...` and `whish topup ...`.

use serde_json::{Value, json};
use whish::ExternalId;
use whish::collect::{CollectUrls, NewPayment};
use whish::topup::{PayOutcome, PayRequest, SoldItem};

use crate::cli::{CollectCmd, TopupCmd};
use crate::output::{self, Done, PENDING, usage};
use crate::settings::Ctx;
use crate::transfer::{amount, currency};

fn external_id(x: Option<String>) -> Result<Option<ExternalId>, u8> {
    x.map(|v| ExternalId::new(v).map_err(usage)).transpose()
}

pub async fn run(ctx: &Ctx, cmd: CollectCmd) -> Done {
    let out = ctx.out;
    let client = ctx.collect()?;
    let report = |e: &whish::collect::Error| output::error(&out, e);
    match cmd {
        CollectCmd::Balance { currency: c } => {
            let b = client.balance(currency(c)).await.map_err(|e| report(&e))?;
            Ok(out.success(&json!({"balance": b.balance, "currency": b.currency})))
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
            eprintln!(
                "whish: externalId {}: store it with the order; status and refund need it",
                prepared.external_id()
            );
            let created = client
                .create_payment(&prepared)
                .await
                .map_err(|e| report(&e))?;
            Ok(out.success(&json!({
                "collectUrl": created.collect_url,
                "externalId": created.external_id,
                "retrieved": created.retrieved,
            })))
        }
        CollectCmd::Status {
            currency: c,
            external_id: x,
        } => {
            let id = ExternalId::new(x).map_err(usage)?;
            let s = client
                .status(currency(c), &id)
                .await
                .map_err(|e| report(&e))?;
            Ok(out.success(&json!({
                "collectStatus": s.collect_status,
                "payerPhoneNumber": s.payer_phone_number,
            })))
        }
        CollectCmd::Refund {
            currency: c,
            external_id: x,
            reason,
        } => {
            let id = ExternalId::new(x).map_err(usage)?;
            let r = client
                .refund(currency(c), &id, reason.as_deref())
                .await
                .map_err(|e| report(&e))?;
            Ok(out.success(&json!({"externalId": r.external_id, "retrieved": r.retrieved})))
        }
    }
}

fn item(i: &SoldItem, show_pin: bool) -> Value {
    let pin = |p: Option<&whish::topup::Pin>| match (p, show_pin) {
        (None, _) => Value::Null,
        (Some(p), true) => Value::from(p.expose()),
        (Some(_), false) => Value::from("<hidden: --show-pin>"),
    };
    json!({
        "transactionId": i.transaction_id,
        "phone": i.phone,
        "amount": i.amount,
        "originalAmount": i.original_amount,
        "fees": i.fees,
        "service": i.service,
        "denomination": i.denomination,
        "serial": i.serial,
        "secret": pin(i.secret.as_ref()),
        "formattedSecret": pin(i.formatted_secret.as_ref()),
        "validity": i.validity,
        "help": i.help,
        "expiry": i.expiry,
        "date": i.date,
        "time": i.time,
        "voided": i.voided,
        "fromVoid": i.from_void,
    })
}

pub async fn topup(ctx: &Ctx, cmd: TopupCmd) -> Done {
    let out = ctx.out;
    let client = ctx.topup()?;
    let report = |e: &whish::topup::Error| output::error(&out, e);
    match cmd {
        TopupCmd::Balance => {
            let b = client.balance().await.map_err(|e| report(&e))?;
            Ok(out.success(&json!({"balance": b.balance, "voidBalance": b.void_balance})))
        }
        TopupCmd::Options { provider, target } => {
            let f = client
                .fetch_options(&provider, &target)
                .await
                .map_err(|e| report(&e))?;
            Ok(out.success(&json!({
                "provider": f.provider(),
                "target": f.target(),
                "options": f.options().iter().map(|o| json!({
                    "id": o.id(),
                    "displayName": o.display_name(),
                    "amount": o.amount(),
                    "price": o.price(),
                    "currency": o.currency(),
                    "metadata": o.metadata(),
                })).collect::<Vec<_>>(),
            })))
        }
        TopupCmd::Pay {
            provider,
            target,
            option_id,
            external_id: x,
            show_pin,
        } => {
            let f = client
                .fetch_options(&provider, &target)
                .await
                .map_err(|e| report(&e))?;
            let Some(option) = f.option(&option_id) else {
                let ids: Vec<&str> = f.options().iter().map(|o| o.id()).collect();
                return Err(usage(format!(
                    "option `{option_id}` is not on offer for this target (offered: {})",
                    ids.join(", ")
                )));
            };
            let mut request = PayRequest::new(option);
            if let Some(x) = external_id(x)? {
                request = request.external_id(x);
            }
            let prepared = client.prepare_pay(request).map_err(|e| report(&e))?;
            eprintln!(
                "whish: externalId {}: store it; a retry of this payment must reuse it (--external-id)",
                prepared.external_id()
            );
            match client.pay(&prepared).await.map_err(|e| report(&e))? {
                PayOutcome::Paid(p) => Ok(out.success(&json!({
                    "externalId": p.external_id,
                    "retrieved": p.retrieved,
                    "amount": prepared.amount(),
                    "listOfSoldItems": p.sold_items().iter().map(|i| item(i, show_pin)).collect::<Vec<_>>(),
                }))),
                PayOutcome::Challenge(c) => Err(out.failure(
                    &json!({"code": c.code.to_string(), "dialog": c.dialog, "externalId": c.external_id}),
                    "the provider asks for a further step (a challenge); complete it, then pay again with the same --external-id",
                    PENDING,
                )),
                other => Err(out.failure(
                    &json!({"outcome": format!("{other:?}")}),
                    "an outcome this version does not know",
                    PENDING,
                )),
            }
        }
    }
}
