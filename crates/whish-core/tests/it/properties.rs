//! Properties of the core types, over generated inputs.
//!
//! - Every decimal with at most 2 places and magnitude below 10^12 survives every way an
//!   [`Amount`] travels: JSON number out and back, JSON string out and back, its text, and the
//!   double the service reads.
//! - The envelope and the core value types never panic, whatever the bytes.

use proptest::prelude::*;
use serde_json::Value;
use whish_core::{
    Amount, Code, Currency, DateTime, DayMonthYear, Decimal, Envelope, EpochMillis, ExternalId,
    RequestId,
};
use whish_testkit::arbitrary::any_json;

/// Every decimal with up to 2 places strictly between -10^12 and 10^12.
fn money() -> impl Strategy<Value = Decimal> {
    const LIMIT: i64 = 100_000_000_000_000; // 10^12 in hundredths
    (-LIMIT + 1..LIMIT, 0u32..=2).prop_map(|(cents, scale)| {
        // Scale 0 and 1 values are the same numbers written with fewer places.
        let divisor = 10i64.pow(2 - scale);
        Decimal::new(cents / divisor, scale)
    })
}

#[derive(serde::Serialize, serde::Deserialize)]
struct AsString {
    #[serde(with = "whish_core::runtime::amount_as_string")]
    amount: Amount,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn amounts_round_trip_exactly(d in money()) {
        let a = Amount::new(d);
        // As a JSON number, the way the transfer and top-up services carry amounts.
        let number = serde_json::to_string(&a).expect("every such amount can be a JSON number");
        let back: Amount = serde_json::from_str(&number).expect("reads back");
        prop_assert_eq!(back, a);
        prop_assert_eq!(back.to_plain_string(), a.to_plain_string());
        // As a JSON string, the way the collect service carries them.
        let text = serde_json::to_string(&AsString { amount: a }).expect("string");
        let back: AsString = serde_json::from_str(&text).expect("reads back");
        prop_assert_eq!(back.amount, a);
        // As text, and as the double a service on the other side reads.
        prop_assert_eq!(a.to_plain_string().parse::<Amount>().expect("parses"), a);
        let f = a.to_exact_f64().expect("representable as the shortest double");
        prop_assert_eq!(Amount::from_f64(f), Some(a));
    }

    #[test]
    fn amount_rules_agree_with_the_table(d in money()) {
        // USD: at least 1.00, at most 2 places; LBP: whole, at least 1000.
        let a = Amount::new(d);
        let usd_ok = d >= Decimal::ONE;
        prop_assert_eq!(a.check_rules(&Currency::Usd, "amount").is_ok(), usd_ok);
        let lbp_ok = d >= Decimal::from(1000) && d.normalize().scale() == 0;
        prop_assert_eq!(a.check_rules(&Currency::Lbp, "amount").is_ok(), lbp_ok);
    }

    #[test]
    fn envelope_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = Envelope::<Value>::from_slice(&bytes);
        let _ = Envelope::<Amount>::from_slice(&bytes);
    }

    #[test]
    fn envelope_never_panics_on_json(status in any::<Option<bool>>(), code in any_json(), data in any_json(),
                                     dialog in any_json(), retrieved in any_json()) {
        let mut body = serde_json::Map::new();
        if let Some(s) = status {
            body.insert("status".into(), Value::Bool(s));
        }
        for (k, v) in [("code", code), ("data", data), ("dialog", dialog), ("retrieved", retrieved)] {
            body.insert(k.into(), v);
        }
        let text = Value::Object(body).to_string();
        let e = Envelope::<Value>::from_slice(text.as_bytes());
        // Without `status` the body is not the envelope, whatever else it holds.
        if status.is_none() {
            prop_assert!(e.as_ref().is_err_and(|e| e.not_an_envelope));
        }
        let body = text.as_bytes();
        let _ = Envelope::<Vec<Amount>>::from_slice(body);
        let _ = Envelope::<DateTime>::from_slice(body);
        let _ = Envelope::<DayMonthYear>::from_slice(body);
        let _ = Envelope::<EpochMillis>::from_slice(body);
        let _ = Envelope::<RequestId>::from_slice(body);
        let _ = Envelope::<ExternalId>::from_slice(body);
        let _ = Envelope::<Currency>::from_slice(body);
    }

    #[test]
    fn code_500_is_pending_in_every_spelling(status in any::<bool>(), as_text in any::<bool>()) {
        let code = if as_text { "\"500\"" } else { "500" };
        let text = format!(r#"{{"status":{status},"code":{code}}}"#);
        let e = Envelope::<Value>::from_slice(text.as_bytes()).expect("an envelope");
        prop_assert_eq!(&e.code, &Code::Pending);
        prop_assert_eq!(e.outcome(), whish_core::Outcome::Pending);
    }

    #[test]
    fn a_double_reads_as_its_shortest_decimal(v in prop_oneof![
        any::<f64>(),
        (-100_000_000_000_000i64..100_000_000_000_000, 0u32..=4)
            .prop_map(|(m, s)| m as f64 / 10f64.powi(s as i32)),
    ]) {
        // The cents fast path must agree with formatting the shortest round-trip text.
        let slow = v.is_finite()
            .then(|| Decimal::from_str_exact(&format!("{v}")).ok())
            .flatten();
        prop_assert_eq!(Amount::from_f64(v).map(Amount::value), slow);
    }

    #[test]
    fn the_date_fast_path_agrees_with_the_format(y in 0u32..10000, mo in 0u32..14, d in 0u32..33,
                                                 h in 0u32..26, mi in 0u32..62, s in 0u32..62) {
        let text = format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}");
        let general = time::PrimitiveDateTime::parse(
            &text,
            time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]"),
        )
        .ok();
        prop_assert_eq!(DateTime::parse(&text, "date").ok().map(|t| t.0), general);
    }

    #[test]
    fn value_types_never_panic_on_text(s in ".{0,40}") {
        let _ = s.parse::<Amount>();
        let _ = DateTime::parse(&s, "date");
        let _ = DayMonthYear::parse(&s, "date");
        let _ = ExternalId::new(s.clone());
        let _ = Currency::from_code(&s);
        let _ = serde_json::from_value::<Amount>(Value::String(s));
    }
}
