//! Property: no decimal text, however long, signed, exponented or malformed, makes any amount path
//! panic: parsing, the rules, writing a request (as a number or a string), reading a reply (as a
//! number or a string), the fee quote on the wire both ways, and the statement rule. What a path
//! cannot hold is a typed error: a local refusal before sending, a decode error after.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use whish::transfer::reconcile::check_balance_rule;
use whish::transfer::{CountryId, CurrencyStatement, FeeRequest, TransferClient};
use whish::{Amount, Currency, SecretString};
use whish_testkit::{ScriptedServer, Step, fast_policy, fixture};

/// Text that looks like a number more often than not: digits, signs, dots, exponents,
/// underscores and the odd letter, up to 48 characters.
fn decimal_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[-+]?[0-9]{1,30}(\\.[0-9]{0,30})?([eE][-+]?[0-9]{1,3})?",
        "[-+0-9._eE]{0,48}",
        "[0-9]{1,40}",
        "[0-9]{0,5}\\.[0-9]{20,40}",
    ]
}

#[test]
fn no_amount_text_panics_the_value_paths() {
    let mut runner = TestRunner::new(Config {
        cases: 2000,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&decimal_text(), |text| {
            if let Ok(a) = Amount::parse(&text) {
                for currency in [Currency::Usd, Currency::Lbp] {
                    if a.check_rules(&currency, "amount").is_ok() {
                        // What the rules let through is written exactly as a JSON number.
                        prop_assert!(a.is_exact_json_number());
                        let json = serde_json::to_string(&a).expect("writes");
                        let back: Amount = serde_json::from_str(&json).expect("reads back");
                        prop_assert_eq!(back, a);
                    }
                }
                let _ = serde_json::to_string(&a).expect("always writes, as a string if need be");
                let _ = a.to_exact_f64();
            }
            // Read from a reply, as a JSON string and as a JSON number.
            let _ = serde_json::from_str::<Amount>(&serde_json::to_string(&text).expect("s"));
            let _ = serde_json::from_str::<Amount>(&text);
            Ok(())
        })
        .expect("no panic");
}

#[test]
fn no_amount_text_panics_a_fee_quote_or_the_statement_rule() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let server = rt.block_on(ScriptedServer::start(Vec::new()));
    let client = TransferClient::builder(
        whish::ClientSettings::new(format!("{}/api", server.base)).policy(fast_policy(0)),
    )
    .username("u")
    .key(SecretString::from("k"))
    .build()
    .expect("client");
    let statement: Vec<CurrencyStatement> = {
        let v: serde_json::Value =
            serde_json::from_str(&fixture("money-transfer/statement.success.json")).expect("j");
        serde_json::from_value(v["data"]["list"].clone()).expect("statement")
    };
    let mut runner = TestRunner::new(Config {
        cases: 300,
        failure_persistence: None,
        ..Config::default()
    });
    let sent = std::cell::Cell::new(0u32);
    runner
        .run(&(decimal_text(), decimal_text()), |(asked, answered)| {
            // Request side: refused locally or sent; never a panic.
            if let Ok(amount) = Amount::parse(&asked) {
                let quote = FeeRequest::new(CountryId::LEBANON, Currency::Usd, amount);
                let reply = format!(
                    r#"{{"status":true,"code":null,"data":{{"fees":{answered},"amount":1,"totalAmount":"{answered}"}}}}"#
                );
                server.push(Step::json(reply));
                match rt.block_on(client.fees(&quote)) {
                    Err(e) if e.nothing_sent() => {}
                    _ => sent.set(sent.get() + 1),
                }
            }
            // The statement rule over hostile balances: a break or fine, never a panic.
            if let Ok(a) = Amount::parse(&answered) {
                let mut s = statement[0].clone();
                s.transactions[0].balance = a;
                s.transactions[1].debit = a;
                let _ = check_balance_rule(&s);
            }
            Ok(())
        })
        .expect("no panic");
    assert!(sent.get() > 0, "some quotes went out");
}
