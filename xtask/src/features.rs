//! `cargo xtask features`: the facade builds with no feature and with each feature alone, and a
//! single-service build pulls in only that service crate and whish-core.

use std::collections::BTreeSet;
use std::path::Path;

use crate::cargo;

/// The facade's features and the service crate each one pulls in.
pub const SERVICES: [(&str, &str); 4] = [
    ("money-transfer", "whish-money-transfer"),
    ("locations", "whish-locations"),
    ("hosted-collect", "whish-hosted-collect"),
    ("intl-topup", "whish-intl-topup"),
];

/// Every crate of this workspace that a facade build may contain.
const SDK_CRATES: [&str; 8] = [
    "whish",
    "whish-journal",
    "whish-callbacks",
    "whish-core",
    "whish-money-transfer",
    "whish-locations",
    "whish-hosted-collect",
    "whish-intl-topup",
];

pub fn run(root: &Path) -> Result<(), String> {
    let mut cases: Vec<(Option<&str>, BTreeSet<&str>)> =
        vec![(None, BTreeSet::from(["whish", "whish-core"]))];
    for (feature, krate) in SERVICES {
        cases.push((
            Some(feature),
            BTreeSet::from(["whish", "whish-core", krate]),
        ));
    }
    // The journal: the three money-moving services and the journal, never locations.
    cases.push((
        Some("journal"),
        BTreeSet::from([
            "whish",
            "whish-core",
            "whish-journal",
            "whish-money-transfer",
            "whish-hosted-collect",
            "whish-intl-topup",
        ]),
    ));
    // The callback receiver: the two services that send callbacks, never the journal alone.
    cases.push((
        Some("callbacks"),
        BTreeSet::from([
            "whish",
            "whish-core",
            "whish-callbacks",
            "whish-money-transfer",
            "whish-hosted-collect",
        ]),
    ));
    for (feature, expected) in cases {
        let label = feature.unwrap_or("(no features)");
        let mut args = vec![
            "check",
            "--quiet",
            "--locked",
            "-p",
            "whish",
            "--no-default-features",
        ];
        if let Some(f) = feature {
            args.extend(["--features", f]);
        }
        cargo(root, &args)?;
        let crates = tree(root, feature)?;
        let sdk: BTreeSet<&str> = SDK_CRATES
            .iter()
            .copied()
            .filter(|c| crates.contains(*c))
            .collect();
        if sdk != expected {
            return Err(format!(
                "{label}: the build pulls in {sdk:?}, expected exactly {expected:?}"
            ));
        }
        eprintln!("ok  {label:<16} builds; SDK crates {sdk:?}");
    }
    Ok(())
}

/// The names of the crates a facade build with `feature` alone (or none) compiles, normal edges.
pub fn tree(root: &Path, feature: Option<&str>) -> Result<BTreeSet<String>, String> {
    let mut args = vec![
        "tree",
        "--locked",
        "-p",
        "whish",
        "--no-default-features",
        "-e",
        "normal",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ];
    match feature {
        Some("all") => args.extend([
            "--features",
            "money-transfer,locations,hosted-collect,intl-topup",
        ]),
        Some(f) => args.extend(["--features", f]),
        None => {}
    }
    let out = cargo(root, &args)?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect())
}
