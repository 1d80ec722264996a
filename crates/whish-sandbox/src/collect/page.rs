//! The hosted payment page the sandbox serves at `collectUrl`: phone and six-digit code.

use super::state::Payment;

const STYLE: &str = "body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;background:#f4f5f7;margin:0;display:flex;min-height:100vh;align-items:center;justify-content:center;color:#1d2430}\
main{background:#fff;border-radius:14px;box-shadow:0 6px 24px rgba(0,0,0,.08);padding:32px;width:340px}\
h1{font-size:20px;margin:0 0 4px}.amount{font-size:32px;font-weight:700;margin:16px 0 4px}.invoice{color:#5b6472;margin:0 0 20px}\
label{display:block;font-size:13px;color:#5b6472;margin:14px 0 6px}input{width:100%;box-sizing:border-box;padding:11px 12px;border:1px solid #cfd4dc;border-radius:8px;font-size:16px}\
button{width:100%;margin-top:22px;padding:12px;border:0;border-radius:8px;background:#d6001c;color:#fff;font-size:16px;font-weight:600;cursor:pointer}\
.note{font-size:12px;color:#8a93a0;margin-top:18px}.badge{display:inline-block;font-size:11px;background:#fff3cd;color:#7a5b00;border-radius:6px;padding:2px 8px}";

/// The form of a payable link.
pub(crate) fn form(p: &Payment) -> String {
    let invoice = p
        .invoice
        .as_deref()
        .map(|i| format!("<p class=\"invoice\">{}</p>", escape(i)))
        .unwrap_or_default();
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
<title>Pay {amount} {currency}</title><style>{STYLE}</style></head><body><main>\
<span class=\"badge\">SANDBOX</span><h1>Pay from your wallet</h1>\
<div class=\"amount\">{amount} {currency}</div>{invoice}\
<form method=\"post\" action=\"{token}\">\
<label for=\"phone\">Wallet phone number</label><input id=\"phone\" name=\"phone\" type=\"tel\" autocomplete=\"tel\" required>\
<label for=\"code\">One-time code</label><input id=\"code\" name=\"code\" inputmode=\"numeric\" pattern=\"[0-9]{{6}}\" maxlength=\"6\" required>\
<button type=\"submit\">Pay {amount} {currency}</button></form>\
<p class=\"note\">Sandbox: no code is sent; use the sandbox test phone and code. A wrong code counts as a failed attempt and the link stays payable.</p>\
</main></body></html>",
        amount = display_amount(p),
        currency = p.currency,
        token = escape(&p.token),
    )
}

/// The page of a link that can no longer be paid.
pub(crate) fn closed(p: &Payment) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Payment link</title><style>{STYLE}</style></head>\
<body><main><span class=\"badge\">SANDBOX</span><h1>This link is no longer payable</h1><p class=\"invoice\">Status: {}</p></main></body></html>",
        p.state.as_str()
    )
}

/// The page of an unknown link.
pub(crate) fn unknown() -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Payment link</title><style>{STYLE}</style></head>\
<body><main><h1>Unknown payment link</h1></main></body></html>"
    )
}

/// USD with two decimals, LBP whole.
fn display_amount(p: &Payment) -> String {
    let mut a = p.amount;
    a.rescale(if p.currency == "USD" { 2 } else { 0 });
    a.to_string()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}
