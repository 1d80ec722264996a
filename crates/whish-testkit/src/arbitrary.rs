//! Generated inputs for property tests (proptest).

use proptest::prelude::*;
use serde_json::{Map, Value};

/// Arbitrary JSON, a few levels deep, with the scalars the services use and some they do not.
pub fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        (-1_000_000i64..1_000_000, 0u32..6).prop_map(|(m, s)| {
            serde_json::from_str(&whish_core::Decimal::new(m, s).to_string()).unwrap_or(Value::Null)
        }),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("500"),
            Just("SENT"),
            Just("RECEIVED"),
            Just("2026-11-21 10:00:00"),
            Just("21-11-2026"),
            Just("1e400"),
            Just("-0"),
            Just("USD"),
            Just("LBP"),
            Just(""),
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Object keys: mostly the spec's own names, so the random values land where decoders look.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "status",
            "code",
            "data",
            "dialog",
            "retrieved",
            "list",
            "amount",
            "fees",
            "totalAmount",
            "transferId",
            "ltnNumber",
            "requestId",
            "currency",
            "balance",
            "transactions",
            "currentBalance",
            "date",
            "debit",
            "credit",
            "type",
            "id",
            "collectStatus",
            "collectUrl",
            "externalId",
            "items",
            "options",
            "price",
            "pin",
            "soldItems",
            "districts",
            "shops",
            "title",
            "message",
        ])
        .prop_map(str::to_owned),
        "[a-zA-Z]{1,8}",
    ]
}
