//! `cargo xtask public-api [--check]`: the public surface of every published crate, one item a
//! line, kept in `crates/NAME/public-api.txt` so that every API change shows up in review.
//!
//! The surface is read from rustdoc JSON, which stable rustdoc writes behind
//! `-Z unstable-options`; `RUSTC_BOOTSTRAP=1` allows that on the stable toolchain for this one
//! command. It is rendered by the `public-api` crate, pinned to the JSON format of Rust 1.95.

use std::path::Path;
use std::process::Command;

/// The crates users depend on; their surface is pinned.
pub const PUBLISHED: &[&str] = &[
    "whish-core",
    "whish-money-transfer",
    "whish-locations",
    "whish-hosted-collect",
    "whish-intl-topup",
    "whish-journal",
    "whish-callbacks",
    "whish-payouts",
    "whish",
    "whish-sandbox",
];

pub fn run(root: &Path, check: bool) -> Result<(), String> {
    let mut stale = Vec::new();
    for name in PUBLISHED {
        let text = surface(root, name)?;
        let path = root.join("crates").join(name).join("public-api.txt");
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        if old == text {
            continue;
        }
        if check {
            stale.push(format!(
                "{} ({})",
                path.display(),
                diff_summary(&old, &text)
            ));
        } else {
            std::fs::write(&path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
            println!("wrote {}", path.display());
        }
    }
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the public API changed; review it and run `cargo xtask public-api`:\n  {}",
            stale.join("\n  ")
        ))
    }
}

fn surface(root: &Path, name: &str) -> Result<String, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = root.join("target").join("public-api");
    let status = Command::new(cargo)
        .current_dir(root)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", &target)
        .args([
            "rustdoc",
            "--quiet",
            "--lib",
            "--all-features",
            "--package",
            name,
            "--",
            "-Z",
            "unstable-options",
            "--output-format",
            "json",
        ])
        .status()
        .map_err(|e| format!("cannot run cargo rustdoc: {e}"))?;
    if !status.success() {
        return Err(format!("cargo rustdoc failed for {name}"));
    }
    let json = target
        .join("doc")
        .join(format!("{}.json", name.replace('-', "_")));
    let api = public_api::Builder::from_rustdoc_json(&json)
        .omit_blanket_impls(true)
        .omit_auto_trait_impls(true)
        .omit_auto_derived_impls(true)
        .build()
        .map_err(|e| format!("{}: {e}", json.display()))?;
    let mut text = format!(
        "# The public API of {name}, from `cargo xtask public-api`. Do not edit by hand: an API\n\
         # change shows here in review; CI fails when this file is stale.\n"
    );
    for item in api.items() {
        text.push_str(&item.to_string());
        text.push('\n');
    }
    Ok(text)
}

fn diff_summary(old: &str, new: &str) -> String {
    let old: std::collections::BTreeSet<&str> = old.lines().collect();
    let new: std::collections::BTreeSet<&str> = new.lines().collect();
    let added = new.difference(&old).count();
    let removed = old.difference(&new).count();
    let mut first: Vec<String> = new
        .difference(&old)
        .take(3)
        .map(|l| format!("+ {l}"))
        .chain(old.difference(&new).take(3).map(|l| format!("- {l}")))
        .collect();
    first.truncate(4);
    format!("{added} added, {removed} removed: {}", first.join("; "))
}
