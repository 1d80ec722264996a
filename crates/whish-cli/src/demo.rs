//! `whish demo`: the sandbox in-process, every flow through the SDK clients over HTTP, each step
//! printed with what it proves. Exit 0 only when every step matched.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use whish::callbacks::{
    HandlerError, PaymentUpdate, Receiver, Source, TransferNotification, Trigger,
};
use whish::collect::{CollectClient, CollectStatus, CollectUrls, NewPayment};
use whish::locations::{LocationsClient, ShopFilter};
use whish::topup::{PayOutcome, TopupClient};
use whish::transfer::callback::SignedInput;
use whish::transfer::{
    ActivityStatus, CashCollectionSend, Customer, FeeRequest, FirstName, LastName,
    MobileWalletSend, Reason, ReportRange, SendOutcome, SourceOfFunds, StatusQuery, TransferClient,
    TransferStatus, reconcile,
};
use whish::{Amount, Currency, Policy, SecretString, UserAgent};
use whish_sandbox::{Endpoint, Fault, Sandbox};

use crate::output::{self, Done};

type Step = Result<String, String>;

/// What the callback receiver handed to the demo's handlers.
#[derive(Debug, Clone)]
enum Handed {
    Transfer(TransferNotification),
    Payment(PaymentUpdate),
}

type Inbox = Arc<Mutex<Vec<Handed>>>;

struct Clients {
    transfer: TransferClient,
    locations: LocationsClient,
    collect: CollectClient,
    topup: TopupClient,
}

/// Colour on a terminal unless `NO_COLOR` is set to anything (no-color.org).
fn colour() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

struct Progress {
    tty: bool,
    total: usize,
    done: usize,
    failed: Vec<String>,
}

impl Progress {
    fn report(&mut self, name: &str, result: Step) {
        self.done += 1;
        let n = format!("[{:>2}/{}]", self.done, self.total);
        match result {
            Ok(proof) => {
                if self.tty && colour() {
                    println!("{n} \x1b[32m✓\x1b[0m {name}\n        \x1b[2m{proof}\x1b[0m");
                } else if self.tty {
                    println!("{n} ✓ {name}\n        {proof}");
                } else {
                    println!("{n} ok   {name}: {proof}");
                }
            }
            Err(why) => {
                if self.tty && colour() {
                    println!("{n} \x1b[31m✗\x1b[0m {name}\n        {why}");
                } else if self.tty {
                    println!("{n} ✗ {name}\n        {why}");
                } else {
                    println!("{n} FAIL {name}: {why}");
                }
                self.failed.push(name.to_owned());
            }
        }
    }
}

fn amount(s: &str) -> Amount {
    s.parse().unwrap_or_default()
}

fn e<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

fn ensure(ok: bool, why: impl Into<String>) -> Result<(), String> {
    if ok { Ok(()) } else { Err(why.into()) }
}

fn cash(amount_text: &str) -> CashCollectionSend {
    CashCollectionSend::new(
        whish::transfer::CountryId::LEBANON,
        Currency::Usd,
        amount(amount_text),
        whish::transfer::Sender::new(Customer::new(
            FirstName::new("John"),
            LastName::new("Smith"),
            "+14155550100",
        )),
        whish::transfer::CashReceiver::new(
            Customer::new(
                FirstName::new("Rami"),
                LastName::new("Haddad"),
                "+96170123456",
            ),
            whish::transfer::Identity::new(
                whish::transfer::DateOfBirth::parse("07-03-1990").expect("a fixed past date"),
            ),
        ),
        Reason::FamilySupport,
        SourceOfFunds::Salary,
    )
}

fn wallet(phone: &str) -> MobileWalletSend {
    MobileWalletSend::new(
        whish::transfer::CountryId::LEBANON,
        Currency::Usd,
        amount("50"),
        whish::transfer::Sender::new(Customer::new(
            FirstName::new("John"),
            LastName::new("Smith"),
            "+14155550100",
        )),
        whish::transfer::WalletReceiver::new(Customer::new(
            FirstName::new("Rami"),
            LastName::new("Haddad"),
            phone,
        )),
        Reason::Education,
        SourceOfFunds::Savings,
    )
}

/// The callback receiver an integrator deploys (`whish::callbacks`), on a loopback port: the
/// sandbox's signed transfer callback and the collect GET callbacks travel its code. Its
/// handlers put what they are handed into the inbox.
async fn listener(sb: &Sandbox, c: &Clients) -> std::io::Result<(String, Inbox, Receiver)> {
    let inbox: Inbox = Arc::default();
    let key = sb.callback_key().to_vec();
    let verifier = move |i: &SignedInput<'_>| {
        whish_sandbox::callback::verify_signature(&key, i.timestamp, i.body, i.signature)
    };
    let (transfers, payments) = (inbox.clone(), inbox.clone());
    let receiver = Receiver::builder()
        .transfer(verifier, move |n: TransferNotification| {
            if let Ok(mut v) = transfers.lock() {
                v.push(Handed::Transfer(n));
            }
            std::future::ready(Ok::<(), HandlerError>(()))
        })
        .collect(c.collect.clone(), move |u: PaymentUpdate| {
            if let Ok(mut v) = payments.lock() {
                v.push(Handed::Payment(u));
            }
            std::future::ready(Ok::<(), HandlerError>(()))
        })
        .build();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", tcp.local_addr()?);
    let serving = receiver.clone();
    tokio::spawn(async move {
        let _ = serving
            .serve(tcp, whish::callbacks::ServeLimits::new())
            .await;
    });
    Ok((base, inbox, receiver))
}

/// Wait until the inbox holds `n` items (the handlers run in the background).
async fn handed(inbox: &Inbox, n: usize) -> Result<Vec<Handed>, String> {
    for _ in 0..200 {
        let v = inbox.lock().map_err(e)?.clone();
        if v.len() >= n {
            return Ok(v);
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Err(format!(
        "the receiver handed on fewer than {n} notifications"
    ))
}

fn clients(sb: &Sandbox) -> Result<Clients, String> {
    let ua: UserAgent = "WhishDemo/0.1 (https://github.com/whish-rs/whish-rs; demo@example.com)"
        .parse()
        .map_err(e)?;
    let mut policy = Policy::default();
    policy.retry.max_retries = 2;
    policy.timeouts.attempt = Duration::from_secs(3);
    let t = sb.transfer_credentials();
    let c = sb.collect_credentials();
    let u = sb.topup_credentials();
    Ok(Clients {
        transfer: TransferClient::builder(
            whish::ClientSettings::new(sb.transfer_base_url())
                .allow_local_callbacks()
                .policy(policy),
        )
        .username(t.username.clone())
        .key(SecretString::from(t.key.clone()))
        .build()
        .map_err(e)?,
        locations: LocationsClient::builder(
            whish::ClientSettings::new(sb.transfer_base_url()).policy(policy),
        )
        .username(t.username.clone())
        .key(SecretString::from(t.key.clone()))
        .build()
        .map_err(e)?,
        collect: CollectClient::builder(
            whish::ClientSettings::new(sb.collect_base_url())
                .allow_local_callbacks()
                .policy(policy)
                .user_agent(ua.clone()),
        )
        .channel(c.channel.clone())
        .secret(SecretString::from(c.secret.clone()))
        .website_url(c.website_url.clone())
        .build()
        .map_err(e)?,
        topup: TopupClient::builder(
            whish::ClientSettings::new(sb.topup_base_url())
                .policy(policy)
                .user_agent(ua),
        )
        .session_id(SecretString::from(u.session_id.clone()))
        .token(SecretString::from(u.token.clone()))
        .build()
        .map_err(e)?,
    })
}

const STEPS: usize = 16;

/// Run the demo; `tty` chooses the progress display.
pub async fn run(tty: bool) -> Done {
    // Lenient: the demo's callbacks go to a listener on this machine, which the real service
    // (and the strict default of the sandbox) refuses.
    let sb = Sandbox::builder()
        .lenient(true)
        .start()
        .await
        .map_err(|err| output::usage(format!("cannot start the sandbox: {err}")))?;
    let c = clients(&sb).map_err(output::usage)?;
    let (cb_base, inbox, receiver) = listener(&sb, &c)
        .await
        .map_err(|err| output::usage(format!("cannot start the callback receiver: {err}")))?;
    println!(
        "whish demo: sandbox on {}, callbacks to the receiver on {cb_base}\n",
        sb.root_url()
    );
    let mut p = Progress {
        tty,
        total: STEPS,
        done: 0,
        failed: Vec::new(),
    };

    // Money transfer.
    p.report("quote a transfer", quote(&c).await);
    let sent = send_cash(&c, &cb_base).await;
    let ltn = sent.as_ref().ok().map(|(l, _, _)| l.clone());
    p.report(
        "cash-collection send",
        sent.map(|(l, t, r)| {
            format!("SENT: LTN {l}, transfer {t}, Request-id {r} stored before sending")
        }),
    );
    p.report(
        "receiver collects; callback received",
        collect_and_callback(&c, &sb, &inbox, ltn.as_deref()).await,
    );
    p.report(
        "status is RECEIVED",
        status_received(&c, ltn.as_deref()).await,
    );
    p.report("send then cancel", send_then_cancel(&c).await);
    p.report("mobile wallet: credited and failed", wallets(&c, &sb).await);
    p.report("activity and statement reconcile", reports(&c).await);
    p.report("governorates and shops", locations(&c).await);
    // Hosted collect.
    let created = create_payment(&c, &cb_base).await;
    let payment = created.as_ref().ok().cloned();
    p.report(
        "collect: create a payment",
        created.map(|(url, id)| format!("collectUrl {url} (not a payment yet), externalId {id}")),
    );
    p.report(
        "collect: pay on the hosted page over HTTP",
        pay_page(&sb, &inbox, payment.as_ref()).await,
    );
    p.report(
        "collect: status then refund once",
        status_and_refund(&c, payment.as_ref()).await,
    );
    // Top-up.
    p.report("top-up: options and pay", topup(&c, &sb).await);
    p.report(
        "top-up: replay does not charge twice",
        topup_replay(&c, &sb).await,
    );
    // Faults.
    p.report(
        "dropped reply recovered by the safe resend",
        dropped_reply(&c, &sb).await,
    );
    p.report(
        "dropped request resent, nothing duplicated",
        dropped_request(&c, &sb).await,
    );
    p.report(
        "journal: a client dropped mid-send, recovered after a restart",
        journal_recovery(&c, &sb).await,
    );

    receiver.shutdown().await;
    sb.shutdown().await;
    println!();
    if p.failed.is_empty() {
        println!("whish demo: all {} steps matched.", p.done);
        Ok(output::OK)
    } else {
        println!(
            "whish demo: {} of {} steps did not match: {}",
            p.failed.len(),
            p.done,
            p.failed.join(", ")
        );
        Err(output::REFUSED)
    }
}

async fn quote(c: &Clients) -> Step {
    let q = c
        .transfer
        .fees(&FeeRequest::new(
            whish::transfer::CountryId::LEBANON,
            Currency::Usd,
            amount("100"),
        ))
        .await
        .map_err(e)?;
    let d = c
        .transfer
        .fees(
            &FeeRequest::new(
                whish::transfer::CountryId::LEBANON,
                Currency::Usd,
                amount("100"),
            )
            .deduct_fees(true),
        )
        .await
        .map_err(e)?;
    ensure(
        q.total_amount == amount("105") && d.amount == amount("95"),
        format!("unexpected quotes {q:?} {d:?}"),
    )?;
    Ok(format!(
        "100 USD costs {} in fees: total {} on top, or the receiver gets {} with deductFees",
        q.fees, q.total_amount, d.amount
    ))
}

async fn send_cash(c: &Clients, cb_base: &str) -> Result<(String, String, i64), String> {
    let prepared = c
        .transfer
        .prepare_send(
            cash("100").callback_url(format!("{cb_base}{}", whish::callbacks::TRANSFER_PATH)),
        )
        .map_err(e)?;
    match c.transfer.send(&prepared).await.map_err(e)? {
        SendOutcome::Sent(s) => Ok((s.ltn_number, s.transfer_id, prepared.request_id().get())),
        other => Err(format!("expected SENT, got {other:?}")),
    }
}

async fn collect_and_callback(c: &Clients, sb: &Sandbox, inbox: &Inbox, ltn: Option<&str>) -> Step {
    let ltn = ltn.ok_or("no transfer to collect")?;
    let before = inbox.lock().map_err(e)?.len();
    sb.collect_cash(ltn).await.map_err(e)?;
    let got = handed(inbox, before + 1).await?;
    let Some(Handed::Transfer(n)) = got.get(before) else {
        return Err(format!("expected a transfer notification, got {got:?}"));
    };
    ensure(
        n.status == TransferStatus::Received && n.source == Source::Callback,
        "the notification is not a RECEIVED callback",
    )?;
    let confirmed = n.confirm(&c.transfer).await.map_err(e)?;
    ensure(
        confirmed.status == TransferStatus::Received,
        "the status endpoint does not confirm it",
    )?;
    let acked = sb
        .callbacks()
        .iter()
        .any(|d| d.kind == "transfer.received" && d.acknowledged());
    ensure(acked, "the receiver did not answer 200")?;
    Ok(format!(
        "POST {}: the receiver checked the signature (sandbox scheme), recorded the change and answered 200; its handler got a notification for Request-id {}, confirmed by status",
        whish::callbacks::TRANSFER_PATH,
        n.request_id
    ))
}

async fn status_received(c: &Clients, ltn: Option<&str>) -> Step {
    let ltn = ltn.ok_or("no transfer")?;
    let s = c
        .transfer
        .status(&StatusQuery::LtnNumber(ltn.to_owned()))
        .await
        .map_err(e)?;
    ensure(
        s.status == TransferStatus::Received,
        format!("status {:?}", s.status),
    )?;
    Ok("the status endpoint, authoritative, confirms RECEIVED".to_owned())
}

async fn send_then_cancel(c: &Clients) -> Step {
    let prepared = c.transfer.prepare_send(cash("40")).map_err(e)?;
    let SendOutcome::Sent(s) = c.transfer.send(&prepared).await.map_err(e)? else {
        return Err("not sent".into());
    };
    let cancelled = c
        .transfer
        .cancel(
            &c.transfer
                .prepare_cancel(&s.ltn_number, Some("demo"))
                .map_err(e)?,
        )
        .await
        .map_err(e)?;
    ensure(
        cancelled.status == TransferStatus::CanceledFull,
        "not CANCELED_FULL",
    )?;
    let again = c
        .transfer
        .cancel(&c.transfer.prepare_cancel(&s.ltn_number, None).map_err(e)?)
        .await;
    let code = match again {
        Err(whish::core::Error::Failed(f)) => f.raw,
        other => return Err(format!("a second cancel answered {other:?}")),
    };
    Ok(format!(
        "CANCELED_FULL; a second cancel is refused with `{code}`"
    ))
}

async fn wallets(c: &Clients, sb: &Sandbox) -> Step {
    let phones = sb.wallet_phones().clone();
    let p = c
        .transfer
        .prepare_send(wallet(&phones.credited))
        .map_err(e)?;
    let credited = match c.transfer.send(&p).await.map_err(e)? {
        SendOutcome::Credited(w) => w,
        other => return Err(format!("expected credited, got {other:?}")),
    };
    let p = c
        .transfer
        .prepare_send(wallet(&phones.failing))
        .map_err(e)?;
    let failed = match c.transfer.send(&p).await {
        Err(whish::core::Error::Failed(f)) => f.raw,
        other => return Err(format!("expected a refusal, got {other:?}")),
    };
    Ok(format!(
        "credited at once (transaction {:?}, final, no callback); the other wallet fails with `{failed}`",
        credited.transaction_id.unwrap_or_default()
    ))
}

async fn reports(c: &Clients) -> Step {
    let range = ReportRange::starting("2000-01-01 00:00:00")
        .and_then(|r| r.until("2100-01-01 00:00:00"))
        .map_err(e)?;
    let activity = c.transfer.activity(&range).await.map_err(e)?;
    let cancelled = activity
        .iter()
        .filter(|a| a.status == ActivityStatus::Cancelled)
        .count();
    let statements = c.transfer.statement(&range).await.map_err(e)?;
    for s in &statements {
        reconcile::check_balance_rule(s).map_err(|b| format!("{b:?}"))?;
    }
    ensure(
        cancelled == 1,
        "the cancelled transfer should appear as CANCELLED once",
    )?;
    Ok(format!(
        "{} activity events (a cancel adds a CANCELLED line); {} statements keep balance = previous + debit - credit",
        activity.len(),
        statements.len()
    ))
}

async fn locations(c: &Clients) -> Step {
    let g = c.locations.governorates().await.map_err(e)?;
    let districts: usize = g.iter().map(|g| g.districts.len()).sum();
    let all = c.locations.shops(&ShopFilter::default()).await.map_err(e)?;
    let beirut = c
        .locations
        .shops(&ShopFilter::default().governorate_id(1))
        .await
        .map_err(e)?;
    ensure(
        g.len() == 8 && districts == 26,
        "expected 8 governorates and 26 districts",
    )?;
    Ok(format!(
        "{} governorates, {districts} districts; {} shops, {} in Beirut",
        g.len(),
        all.len(),
        beirut.len()
    ))
}

async fn create_payment(c: &Clients, cb_base: &str) -> Result<(String, String), String> {
    let id = whish::ExternalId::generate();
    let callback = |path: &str| format!("{cb_base}{path}");
    let urls = CollectUrls::new(
        whish::collect::SuccessCallbackUrl::new(&callback(whish::callbacks::SUCCESS_PATH))
            .map_err(e)?
            .with_reference("externalId", id.as_str())
            .with_reference("currency", "USD"),
        whish::collect::FailureCallbackUrl::new(&callback(whish::callbacks::FAILURE_PATH))
            .map_err(e)?
            .with_reference("externalId", id.as_str())
            .with_reference("currency", "USD"),
        whish::collect::SuccessRedirectUrl::new("https://shop.example.com/thanks").map_err(e)?,
        whish::collect::FailureRedirectUrl::new("https://shop.example.com/retry").map_err(e)?,
    );
    let prepared = c
        .collect
        .prepare_payment(
            NewPayment::new(amount("25.50"), Currency::Usd, urls)
                .invoice("Demo order D-2")
                .external_id(id),
        )
        .map_err(e)?;
    let created = c.collect.create_payment(&prepared).await.map_err(e)?;
    Ok((created.collect_url, prepared.external_id().to_string()))
}

async fn pay_page(sb: &Sandbox, inbox: &Inbox, payment: Option<&(String, String)>) -> Step {
    let (url, _) = payment.ok_or("no payment")?;
    let http = whish::core::tls::client_builder()
        .map_err(e)?
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(e)?;
    let page = http
        .get(url)
        .send()
        .await
        .map_err(e)?
        .text()
        .await
        .map_err(e)?;
    ensure(page.contains("<form"), "the page has no form")?;
    let payer = sb.test_payer().clone();
    let form = |code: &str| {
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("phone", &payer.phone)
            .append_pair("code", code)
            .finish()
    };
    let before = inbox.lock().map_err(e)?.len();
    let mut updates = Vec::new();
    for (i, code) in ["000000", payer.code.as_str()].into_iter().enumerate() {
        http.post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(code))
            .send()
            .await
            .map_err(e)?;
        let got = handed(inbox, before + i + 1).await?;
        match got.get(before + i) {
            Some(Handed::Payment(u)) => updates.push(u.clone()),
            other => return Err(format!("expected a payment update, got {other:?}")),
        }
    }
    ensure(
        updates[0].trigger == Trigger::FailureCallback
            && !updates[0].status.collect_status.is_settled(),
        format!("after the wrong code: {:?}", updates[0]),
    )?;
    ensure(
        updates[1].trigger == Trigger::SuccessCallback
            && updates[1].status.collect_status.is_paid(),
        format!("after the right code: {:?}", updates[1]),
    )?;
    Ok(format!(
        "a wrong code then the right one: the receiver read the status after each GET callback: {} (link still payable), then {} (paid)",
        updates[0].status.collect_status, updates[1].status.collect_status
    ))
}

async fn status_and_refund(c: &Clients, payment: Option<&(String, String)>) -> Step {
    let (_, id) = payment.ok_or("no payment")?;
    let id = whish::ExternalId::new(id.clone()).map_err(e)?;
    let s = c.collect.status(Currency::Usd, &id).await.map_err(e)?;
    ensure(
        s.collect_status == CollectStatus::Success,
        format!("status {:?}", s.collect_status),
    )?;
    let first = c
        .collect
        .refund(
            &c.collect
                .prepare_refund(Currency::Usd, &id, Some("demo"))
                .map_err(e)?,
        )
        .await
        .map_err(e)?;
    let second = c
        .collect
        .refund(
            &c.collect
                .prepare_refund(Currency::Usd, &id, None)
                .map_err(e)?,
        )
        .await
        .map_err(e)?;
    let after = c.collect.status(Currency::Usd, &id).await.map_err(e)?;
    ensure(
        !first.retrieved && second.retrieved && after.collect_status == CollectStatus::Refunded,
        "refund flags",
    )?;
    Ok(format!(
        "status success (payer {}) before fulfilling; refunded once, the second refund replays (retrieved true)",
        s.payer_phone_number.unwrap_or_default()
    ))
}

async fn topup(c: &Clients, sb: &Sandbox) -> Step {
    let offer = c
        .topup
        .fetch_options(
            whish::topup::ProviderId::new("etisalat-ae"),
            "+971501234567",
        )
        .await
        .map_err(e)?;
    let option = offer.option("ETI-12").ok_or("no ETI-12 option")?;
    let prepared = c.topup.prepare_pay(option).map_err(e)?;
    let PayOutcome::Paid(paid) = c.topup.pay(&prepared).await.map_err(e)? else {
        return Err("not paid".into());
    };
    ensure(sb.sales().len() == 1, "one sale")?;
    Ok(format!(
        "{} options; paid {} exactly as fetched; sold item {}",
        offer.options().len(),
        prepared.amount(),
        paid.sold_items()
            .first()
            .map(|i| i.transaction_id())
            .unwrap_or_default()
    ))
}

async fn topup_replay(c: &Clients, sb: &Sandbox) -> Step {
    let offer = c
        .topup
        .fetch_options(
            whish::topup::ProviderId::new("gift-voucher"),
            "buyer@example.com",
        )
        .await
        .map_err(e)?;
    let prepared = c
        .topup
        .prepare_pay(offer.option("GV-20").ok_or("no GV-20")?)
        .map_err(e)?;
    let before = sb.sales().len();
    let PayOutcome::Paid(first) = c.topup.pay(&prepared).await.map_err(e)? else {
        return Err("not paid".into());
    };
    let PayOutcome::Paid(again) = c.topup.pay(&prepared).await.map_err(e)? else {
        return Err("not paid".into());
    };
    ensure(
        again.retrieved && sb.sales().len() == before + 1,
        "the replay charged again",
    )?;
    ensure(first.sold_items()[0].pin().is_some(), "a voucher has a PIN")?;
    Ok("the same externalId replays the sale (retrieved true); the voucher PIN stays hidden in logs".to_owned())
}

async fn dropped_reply(c: &Clients, sb: &Sandbox) -> Step {
    sb.inject(Endpoint::TransferSend, Fault::DropReply, 1);
    let prepared = c.transfer.prepare_send(cash("10")).map_err(e)?;
    let outcome = c.transfer.send(&prepared).await.map_err(e)?;
    let SendOutcome::Confirmed { status, .. } = outcome else {
        return Err(format!("expected Confirmed, got {outcome:?}"));
    };
    let id = prepared.request_id().get();
    let copies = sb.transfers().iter().filter(|t| t.request_id == id).count();
    ensure(
        copies == 1,
        format!("{copies} transfers for one Request-id"),
    )?;
    Ok(format!(
        "the reply was lost after the send was applied; the resend (same bytes, Request-id {id}) answered transfer.already.done, read through status: {:?}; 1 transfer, no duplicate",
        status.status
    ))
}

async fn dropped_request(c: &Clients, sb: &Sandbox) -> Step {
    sb.inject(Endpoint::TopupPay, Fault::DropRequest, 1);
    let offer = c
        .topup
        .fetch_options(whish::topup::ProviderId::new("du-ae"), "971501234567")
        .await
        .map_err(e)?;
    let prepared = c
        .topup
        .prepare_pay(offer.option("DU-1GB").ok_or("no DU-1GB")?)
        .map_err(e)?;
    let PayOutcome::Paid(paid) = c.topup.pay(&prepared).await.map_err(e)? else {
        return Err("not paid".into());
    };
    let copies = sb
        .sales()
        .iter()
        .filter(|s| s.external_id == prepared.external_id().as_str())
        .count();
    ensure(copies == 1, format!("{copies} sales for one externalId"))?;
    Ok(format!(
        "the connection closed before the pay was applied; resent with the same externalId after {} attempts: 1 sale",
        paid.attempts
    ))
}

/// The journal: a send recorded before its first byte, the client dropped while the service
/// holds its reply (a crash), the journal reopened as a new process would, and `recover()`
/// finishing it with the same Request-id: one transfer.
async fn journal_recovery(c: &Clients, sb: &Sandbox) -> Step {
    use whish::journal::{Clients as Recovering, Journal, Recovery, State};
    let dir = std::env::temp_dir().join(format!("whish-demo-{}", std::process::id()));
    let url = format!("sqlite:{}", dir.join("journal.sqlite").display());
    let _ = std::fs::remove_dir_all(&dir);
    let short = Duration::from_millis(200);
    let journal = Journal::builder(&url)
        .lease(short)
        .open()
        .await
        .map_err(e)?;
    let prepared = c.transfer.prepare_send(cash("25")).map_err(e)?;
    let id = prepared.request_id();
    sb.inject(
        Endpoint::TransferSend,
        Fault::Delay(Duration::from_secs(30)),
        1,
    );
    let journaled = journal.transfer(c.transfer.clone());
    let task = tokio::spawn(async move { journaled.send(&prepared).await });
    let arrived = async {
        while !sb.transfers().iter().any(|t| t.request_id == id.get()) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), arrived)
        .await
        .map_err(|_| "the send never reached the sandbox".to_owned())?;
    task.abort(); // the process "dies" with the reply still held
    journal.close().await;
    tokio::time::sleep(short * 2).await; // the dead process's lease expires

    let reopened = Journal::open(&url).await.map_err(e)?;
    let report = reopened
        .recover(
            &Recovering::new().transfer(c.transfer.clone()),
            &Recovery::new(),
        )
        .await
        .map_err(e)?;
    let found = report.changes.iter().find(|ch| ch.key == id.to_string());
    ensure(
        found.is_some_and(|ch| ch.to == State::Accepted),
        format!("recover() did not finish the send: {report:?}"),
    )?;
    let copies = sb
        .transfers()
        .iter()
        .filter(|t| t.request_id == id.get())
        .count();
    ensure(
        copies == 1,
        format!("{copies} transfers for one Request-id"),
    )?;
    reopened.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(format!(
        "Request-id {id} was in the journal before it was sent; after the restart recover() resent it ({}): 1 transfer",
        found
            .map(|ch| ch.outcome.result.as_str())
            .unwrap_or_default()
    ))
}
