//! Every fixture decodes as the envelope, and its outcome is the one its file name says.
//! Each decoded envelope is pinned with insta, so a changed fixture shows up as a diff.

use serde_json::{Value, json};
use whish_core::{Envelope, Outcome};
use whish_testkit::fixtures_in;

/// The outcome is the last of the tokens `success`, `failure`, `pending` in the dotted file name
/// (`status.pending.success.json` is a successful status reply whose collectStatus is pending).
fn expected(name: &str) -> Option<Outcome> {
    name.trim_end_matches(".json")
        .split('.')
        .rev()
        .find_map(|t| match t {
            "success" => Some(Outcome::Success),
            "failure" => Some(Outcome::Failed),
            "pending" => Some(Outcome::Pending),
            _ => None,
        })
}

#[test]
fn every_fixture_decodes_with_the_outcome_its_name_says() {
    let mut seen = 0;
    for dir in [
        "money-transfer",
        "locations",
        "hosted-collect",
        "intl-topup",
    ] {
        for (name, text) in fixtures_in(dir) {
            let Some(want) = expected(&name) else {
                continue;
            };
            assert!(name.ends_with(".json"), "{dir}/{name}");
            let env: Envelope<Value> = Envelope::from_slice(text.as_bytes())
                .unwrap_or_else(|e| panic!("{dir}/{name}: {e}"));
            assert_eq!(env.outcome(), want, "{dir}/{name}");
            if want != Outcome::Success {
                assert!(
                    env.code.as_str().is_some(),
                    "{dir}/{name}: a failure has a code"
                );
            }
            let view = json!({
                "status": env.status,
                "code": env.code.as_str(),
                "outcome": format!("{:?}", env.outcome()),
                "data": env.data,
                "dialog": env.dialog,
                "extra": env.extra,
                "actions": env.actions,
                "retrieved": env.retrieved,
            });
            let snap = format!("{dir}__{}", name.trim_end_matches(".json"));
            insta::assert_json_snapshot!(snap, view);
            seen += 1;
        }
    }
    assert!(seen >= 60, "only {seen} fixtures found");
}

#[test]
fn html_fixtures_are_not_envelopes() {
    for path in [
        "common/proxy-502.html",
        "hosted-collect/create.forbidden.403.html",
    ] {
        let text = whish_testkit::fixture(path);
        let err = Envelope::<Value>::from_slice(text.as_bytes()).expect_err(path);
        assert!(err.not_an_envelope, "{path}");
    }
}
