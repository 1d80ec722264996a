//! `whish topup ...`: balance, options, and pay exactly one fetched option (PINs hidden unless
//! `--show-pin`).

use whish::journal::{Operation, Service};
use whish::topup::{PayOutcome, PayRequest, PreparedPay, SoldItem, TopupClient};

use crate::cli::TopupCmd;
use crate::collect::external_id;
use crate::output::{self, Done, PENDING, usage};
use crate::printed;
use crate::settings::Ctx;

/// A PIN as printed: hidden unless asked for.
fn pin(p: Option<&whish::topup::Pin>, show_pin: bool) -> Option<&str> {
    match (p, show_pin) {
        (None, _) => None,
        (Some(_), false) => Some("<hidden: --show-pin>"),
        (Some(p), true) => Some(p.expose()),
    }
}

fn item(i: &SoldItem, show_pin: bool) -> printed::SoldItem<'_> {
    printed::SoldItem {
        transaction_id: &i.transaction_id,
        phone: i.phone.as_deref(),
        amount: i.amount.as_deref(),
        original_amount: i.original_amount.as_deref(),
        fees: i.fees.as_deref(),
        service: i.service.as_deref(),
        denomination: i.denomination.as_deref(),
        serial: i.serial.as_deref(),
        secret: pin(i.secret.as_ref(), show_pin),
        formatted_secret: pin(i.formatted_secret.as_ref(), show_pin),
        validity: i.validity.as_deref(),
        help: i.help.as_deref(),
        expiry: i.expiry.as_deref(),
        date: i.date.as_deref(),
        time: i.time.as_deref(),
        picture: i.picture.as_deref(),
        picture_url: i.picture_url.as_deref(),
        voided: i.voided,
        from_void: i.from_void,
        print_type: i.print_type,
        view_type: i.view_type,
    }
}

pub async fn topup(ctx: &Ctx, cmd: TopupCmd) -> Done {
    let out = ctx.out;
    let client = ctx.topup()?;
    let report = |e: &whish::topup::Error| output::error(&out, e);
    let read_failed = |e: &whish::topup::Error| output::read_failed(&out, e);
    match cmd {
        TopupCmd::Balance => {
            let b = client.balance().await.map_err(|e| read_failed(&e))?;
            Ok(out.success(&printed::TopupBalance {
                balance: &b.balance,
                void_balance: &b.void_balance,
            }))
        }
        TopupCmd::Options { provider, target } => {
            let f = client
                .fetch_options(whish::topup::ProviderId::new(&provider), &target)
                .await
                .map_err(|e| read_failed(&e))?;
            Ok(out.success(&printed::TopupOptions {
                provider: f.provider(),
                target: f.target(),
                options: f
                    .options()
                    .iter()
                    .map(|o| printed::TopupOption {
                        id: o.id(),
                        display_name: o.display_name(),
                        amount: o.amount(),
                        price: o.price(),
                        currency: o.currency(),
                        metadata: o.metadata(),
                    })
                    .collect(),
            }))
        }
        TopupCmd::Pay {
            provider,
            target,
            option_id,
            pay_target,
            external_id: x,
            show_pin,
        } => {
            let x = external_id(x)?;
            // A retry under an externalId this journal recorded resends the recorded pay (its
            // exact bytes), as recovery does: the options are not fetched again, since a fetch
            // that fails says nothing of a pay that may have charged.
            let recorded = match &x {
                Some(x) => ctx
                    .journal()
                    .await?
                    .entry(Service::IntlTopup, Operation::Pay, x.as_str())
                    .await
                    .map_err(|e| usage(format!("journal: {e}")))?,
                None => None,
            };
            let prepared = match recorded {
                Some(entry) => {
                    let p = PreparedPay::from_stored(
                        entry.context.as_deref().unwrap_or_default(),
                        entry.request.clone(),
                    )
                    .map_err(|e| usage(format!("the recorded pay cannot be read: {e}")))?;
                    // The target as the service wrote it may be spelled otherwise: the
                    // provider and option tell another pay apart.
                    if p.provider() != provider || p.option_id() != option_id {
                        return Err(usage(format!(
                            "externalId {} was recorded for option `{}` of {} to `{}`: a pay under it replays that one; use another externalId for another pay",
                            p.external_id(),
                            p.option_id(),
                            p.provider(),
                            p.target()
                        )));
                    }
                    eprintln!(
                        "whish: externalId {} was recorded before ({}): resending the recorded pay; the options are not fetched again",
                        p.external_id(),
                        entry.state.as_str()
                    );
                    p
                }
                None => {
                    let to = pay_target.as_deref();
                    new_pay(&client, &provider, &target, &option_id, to, x).await?
                }
            };
            let journal = ctx.journal().await?;
            eprintln!(
                "whish: externalId {}: store it; a retry of this payment must reuse it (--external-id)",
                prepared.external_id()
            );
            match journal
                .topup(client)
                .pay(&prepared)
                .await
                .map_err(|e| report(&e))?
            {
                PayOutcome::Paid(p) => Ok(out.success(&printed::TopupPaid {
                    outcome: "accepted",
                    external_id: &p.external_id,
                    retrieved: p.retrieved,
                    amount: prepared.amount(),
                    list_of_sold_items: p.sold_items().iter().map(|i| item(i, show_pin)).collect(),
                    dialog: p.dialog.as_ref(),
                })),
                PayOutcome::Challenge(c) => Err(out.failure(
                    &printed::TopupChallenge {
                        outcome: "pending",
                        code: c.code.to_string(),
                        dialog: c.dialog.as_ref(),
                        external_id: &c.external_id,
                    },
                    "the provider asks for a further step (a challenge); complete it, then pay again with the same --external-id",
                    PENDING,
                )),
                other => Err(out.failure(
                    &printed::UnknownOutcome {
                        outcome: "unknown",
                        id: printed::ByExternalId {
                            external_id: prepared.external_id(),
                        },
                        result: format!("{other:?}"),
                    },
                    "an outcome this version does not know: pay again with the same --external-id",
                    PENDING,
                )),
            }
        }
    }
}

/// A new pay of a fetched option (the options are read first: the pay must be one of them).
async fn new_pay(
    client: &TopupClient,
    provider: &str,
    target: &str,
    option_id: &str,
    pay_target: Option<&str>,
    x: Option<whish::ExternalId>,
) -> Result<PreparedPay, u8> {
    // Before any pay: whatever the fetch answered, nothing was paid.
    let f = client
        .fetch_options(whish::topup::ProviderId::new(provider), target)
        .await
        .map_err(|e| {
            usage(format!(
                "the options could not be fetched ({e}); no pay was sent"
            ))
        })?;
    let Some(option) = f.option(option_id) else {
        let ids: Vec<&str> = f.options().iter().map(|o| o.id()).collect();
        return Err(usage(format!(
            "option `{option_id}` is not on offer for this target (offered: {})",
            ids.join(", ")
        )));
    };
    let mut request = PayRequest::new(option);
    if let Some(x) = x {
        request = request.external_id(x);
    }
    if let Some(t) = pay_target {
        request = request.target(t);
    }
    client
        .prepare_pay(request)
        .map_err(|e| usage(format!("the pay is not valid: {e}")))
}
