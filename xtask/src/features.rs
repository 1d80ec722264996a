//! `cargo xtask features`: the facade builds and documents (no broken link) with no feature and
//! with each feature alone, and a
//! single-service build pulls in only that service crate and whish-core. Then each TLS choice
//! once: its crates and only its crates are in a single-service build (the default stack must not
//! leak in through a service crate's defaults), and a real handshake with it passes
//! (`whish-core`'s tests/tls.rs, built with that feature alone, and with none).

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

/// The TLS choices: the facade feature, the crate that shows it is in the build, and the crates
/// of the other stacks, which must not be.
pub const TLS: [(&str, &str); 3] = [
    ("rustls-ring", "ring"),
    ("rustls-aws-lc-rs", "aws-lc-rs"),
    ("native-tls", "native-tls"),
];

/// The default TLS choice (the facade's and every service crate's `default` feature).
pub const DEFAULT_TLS: &str = "rustls-ring";

/// Every crate of this workspace that a facade build may contain.
const SDK_CRATES: [&str; 9] = [
    "whish",
    "whish-journal",
    "whish-payouts",
    "whish-callbacks",
    "whish-core",
    "whish-money-transfer",
    "whish-locations",
    "whish-hosted-collect",
    "whish-intl-topup",
];

pub fn run(root: &Path) -> Result<(), String> {
    docs_rs_metadata(root)?;
    let mut cases: Vec<(Option<&str>, BTreeSet<&str>)> =
        vec![(None, BTreeSet::from(["whish", "whish-core"]))];
    for (feature, krate) in SERVICES {
        cases.push((
            Some(feature),
            BTreeSet::from(["whish", "whish-core", krate]),
        ));
    }
    // The journal journals the services whose features are on and pulls in none of them.
    for journal in ["journal", "journal-sqlite", "journal-postgres"] {
        cases.push((
            Some(journal),
            BTreeSet::from(["whish", "whish-core", "whish-journal"]),
        ));
    }
    // One service on one backend: that service, the journal, nothing else of the SDK.
    cases.push((
        Some("money-transfer,journal-sqlite"),
        BTreeSet::from([
            "whish",
            "whish-core",
            "whish-journal",
            "whish-money-transfer",
        ]),
    ));
    // Payouts on one backend: the transfer service, the journal and the payouts crate.
    cases.push((
        Some("payouts,journal-sqlite"),
        BTreeSet::from([
            "whish",
            "whish-core",
            "whish-journal",
            "whish-money-transfer",
            "whish-payouts",
        ]),
    ));
    // The sandbox for the user's tests: whish-sandbox and the core only (it is no SDK crate).
    cases.push((Some("testing"), BTreeSet::from(["whish", "whish-core"])));
    // Metrics: the `metrics` facade crate, no SDK crate more.
    cases.push((Some("metrics"), BTreeSet::from(["whish", "whish-core"])));
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
        // The facade's documentation with only this feature: a link to a module that is off
        // must not be left broken (rustdoc would show it as literal brackets).
        let mut doc = vec![
            "--config",
            "build.rustdocflags=[\"-D\", \"warnings\"]",
            "doc",
            "--quiet",
            "--locked",
            "--no-deps",
            "-p",
            "whish",
            "--no-default-features",
        ];
        if let Some(f) = feature {
            doc.extend(["--features", f]);
        }
        cargo(root, &doc)?;
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
        // A journal on one backend does not build the other's driver.
        let sqlite = crates.contains("libsqlite3-sys");
        let postgres = crates.contains("sqlx-postgres");
        let (want_sqlite, want_postgres) = match feature {
            Some(f) if f.contains("journal-sqlite") => (true, false),
            Some(f) if f.contains("journal-postgres") => (false, true),
            Some("journal") => (true, true),
            _ => (false, false),
        };
        if (sqlite, postgres) != (want_sqlite, want_postgres) {
            return Err(format!(
                "{label}: SQLite in the build: {sqlite}, PostgreSQL: {postgres}; expected {want_sqlite} and {want_postgres}"
            ));
        }
        eprintln!("ok  {label:<16} builds and documents; SDK crates {sdk:?}");
    }
    for (feature, marker) in TLS {
        let features = format!("money-transfer,{feature}");
        let crates = tree(root, Some(&features))?;
        if !crates.contains(marker) {
            return Err(format!("{features}: `{marker}` is not in the build"));
        }
        for (_, other) in TLS.iter().filter(|(_, m)| *m != marker) {
            if crates.contains(*other) {
                return Err(format!(
                    "{features}: `{other}` is in the build, from another TLS choice"
                ));
            }
        }
        tls_test(root, Some(feature))?;
        eprintln!("ok  {feature:<16} only its TLS crates; a handshake through it passes");
    }
    // No TLS at all: plain HTTP to loopback, and `https://` is a setup error.
    tls_test(root, None)?;
    eprintln!(
        "ok  {:<16} refuses https:// when the client is built",
        "(no TLS)"
    );
    Ok(())
}

/// whish-core's `tests/tls.rs`, built with `feature` alone (or no feature at all).
fn tls_test(root: &Path, feature: Option<&str>) -> Result<(), String> {
    let mut args = vec![
        "test",
        "--quiet",
        "--locked",
        "-p",
        "whish-core",
        "--no-default-features",
        "--test",
        "tls",
    ];
    if let Some(f) = feature {
        args.extend(["--features", f]);
    }
    cargo(root, &args).map(|_| ())
}

/// A facade feature list, with `all` standing for the four services and the default TLS stack.
pub fn expand(feature: &str) -> String {
    if feature == "all" {
        let services: Vec<&str> = SERVICES.iter().map(|(f, _)| *f).collect();
        format!("{},{DEFAULT_TLS}", services.join(","))
    } else {
        feature.to_owned()
    }
}

/// The names of the crates a facade build with `feature` alone (or none) compiles, normal edges.
pub fn tree(root: &Path, feature: Option<&str>) -> Result<BTreeSet<String>, String> {
    tree_edges(root, feature, "normal")
}

/// As [`tree`], following the given dependency edges (`normal`, or `normal,build` to count the
/// build scripts' dependencies too).
pub fn tree_edges(
    root: &Path,
    feature: Option<&str>,
    edges: &str,
) -> Result<BTreeSet<String>, String> {
    let mut args = vec![
        "tree",
        "--locked",
        "-p",
        "whish",
        "--no-default-features",
        "-e",
        edges,
        "--prefix",
        "none",
        "--format",
        "{p}",
    ];
    let features = feature.map(expand);
    if let Some(f) = &features {
        args.extend(["--features", f]);
    }
    let out = cargo(root, &args)?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect())
}

/// Every published crate documents all its features on docs.rs, with the feature badges
/// (`--cfg docsrs`, which turns on `doc_cfg` in its lib.rs).
fn docs_rs_metadata(root: &Path) -> Result<(), String> {
    let crates = std::fs::read_dir(root.join("crates")).map_err(|e| e.to_string())?;
    for dir in crates.flatten() {
        let manifest = std::fs::read_to_string(dir.path().join("Cargo.toml"))
            .map_err(|e| format!("{}: {e}", dir.path().display()))?;
        if manifest.contains("publish = false") {
            continue;
        }
        let name = dir.file_name().to_string_lossy().into_owned();
        let meta = manifest
            .split("[package.metadata.docs.rs]")
            .nth(1)
            .ok_or_else(|| format!("{name}: no [package.metadata.docs.rs]"))?;
        if !meta.contains("all-features = true") || !meta.contains("\"--cfg\", \"docsrs\"") {
            return Err(format!(
                "{name}: [package.metadata.docs.rs] needs all-features = true and rustdoc-args [\"--cfg\", \"docsrs\"]"
            ));
        }
        let lib = dir.path().join("src").join("lib.rs");
        if let Ok(lib) = std::fs::read_to_string(&lib)
            && !lib.contains("#![cfg_attr(docsrs, feature(doc_cfg))]")
        {
            return Err(format!(
                "{name}: lib.rs lacks #![cfg_attr(docsrs, feature(doc_cfg))]"
            ));
        }
    }
    eprintln!("ok  every published crate has its docs.rs metadata");
    Ok(())
}
