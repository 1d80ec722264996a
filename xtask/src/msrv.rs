//! `cargo xtask msrv [--toolchain]`: the minimum supported Rust version (`rust-version` in the
//! workspace's Cargo.toml) holds.
//!
//! Without installing that toolchain, CI checks the two ways an MSRV breaks unseen:
//! - a dependency that needs a newer Rust: every crate the published crates build with (normal
//!   and build dependencies, for every target) declares a `rust-version` no newer than ours;
//! - a standard-library API newer than it: clippy's `incompatible_msrv` lint, which reads
//!   `rust-version`, in CI's clippy step with `-D warnings`.
//!
//! `--toolchain` also checks the published crates with that toolchain itself (`cargo +VERSION
//! check`), which catches language features too; it needs the toolchain installed (`rustup
//! toolchain install VERSION`) and says so when it is not.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::cargo;
use crate::public_api::PUBLISHED;

pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let msrv = workspace_msrv(root)?;
    let text = cargo(root, &["metadata", "--format-version", "1", "--locked"])?;
    let meta: Value = serde_json::from_str(&text).map_err(|e| format!("cargo metadata: {e}"))?;
    let newer = newer_dependencies(&meta, &msrv)?;
    if !newer.is_empty() {
        return Err(format!(
            "rust-version is {}, but these dependencies of the published crates need newer:\n  {}",
            show(&msrv),
            newer.join("\n  ")
        ));
    }
    println!(
        "msrv {}: every dependency of the published crates declares it or older",
        show(&msrv)
    );
    if args.iter().any(|a| a == "--toolchain") {
        check_with_toolchain(root, &show(&msrv))?;
    }
    Ok(())
}

fn workspace_msrv(root: &Path) -> Result<Vec<u64>, String> {
    let text = std::fs::read_to_string(root.join("Cargo.toml")).map_err(|e| e.to_string())?;
    let manifest: toml::Table = text.parse().map_err(|e| format!("Cargo.toml: {e}"))?;
    let version = manifest
        .get("workspace")
        .and_then(|w| w.get("package"))
        .and_then(|p| p.get("rust-version"))
        .and_then(toml::Value::as_str)
        .ok_or("Cargo.toml has no [workspace.package] rust-version")?;
    parse(version).ok_or_else(|| format!("rust-version `{version}` is not a version"))
}

/// `1.94` or `1.94.0` as numbers; a missing patch is 0.
fn parse(version: &str) -> Option<Vec<u64>> {
    let mut parts: Vec<u64> = version
        .split('.')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    parts.resize(3, 0);
    Some(parts)
}

fn show(version: &[u64]) -> String {
    format!("{}.{}", version[0], version[1])
}

/// The crates reachable from the published crates through normal and build dependencies whose
/// `rust-version` is newer than `msrv`, as `name version (needs X)`.
fn newer_dependencies(meta: &Value, msrv: &[u64]) -> Result<Vec<String>, String> {
    let packages: BTreeMap<&str, &Value> = meta["packages"]
        .as_array()
        .ok_or("cargo metadata: no packages")?
        .iter()
        .filter_map(|p| Some((p["id"].as_str()?, p)))
        .collect();
    let nodes: BTreeMap<&str, &Value> = meta["resolve"]["nodes"]
        .as_array()
        .ok_or("cargo metadata: no resolve graph")?
        .iter()
        .filter_map(|n| Some((n["id"].as_str()?, n)))
        .collect();
    let mut queue: Vec<&str> = packages
        .iter()
        .filter(|(_, p)| {
            let name = p["name"].as_str().unwrap_or_default();
            p["source"].is_null() && (PUBLISHED.contains(&name) || name == "whish-cli")
        })
        .map(|(id, _)| *id)
        .collect();
    if queue.len() != PUBLISHED.len() + 1 {
        return Err(format!(
            "cargo metadata names {} of the {} published crates",
            queue.len(),
            PUBLISHED.len() + 1
        ));
    }
    let mut seen: BTreeSet<&str> = queue.iter().copied().collect();
    let mut newer = Vec::new();
    while let Some(id) = queue.pop() {
        let package = packages[id];
        if let Some(needs) = package["rust_version"].as_str()
            && parse(needs).is_some_and(|v| v.as_slice() > msrv)
        {
            newer.push(format!(
                "{} {} (needs {needs})",
                package["name"].as_str().unwrap_or("?"),
                package["version"].as_str().unwrap_or("?")
            ));
        }
        let Some(node) = nodes.get(id) else { continue };
        for dep in node["deps"].as_array().into_iter().flatten() {
            let not_dev_only = dep["dep_kinds"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|k| k["kind"].as_str() != Some("dev"));
            if let Some(dep_id) = dep["pkg"].as_str()
                && not_dev_only
                && seen.insert(dep_id)
            {
                queue.push(dep_id);
            }
        }
    }
    newer.sort();
    Ok(newer)
}

fn check_with_toolchain(root: &Path, version: &str) -> Result<(), String> {
    let toolchain = format!("+{version}");
    let installed = Command::new("cargo")
        .args([toolchain.as_str(), "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        return Err(format!(
            "Rust {version} is not installed: `rustup toolchain install {version}`, then run again"
        ));
    }
    let mut args = vec![toolchain.as_str(), "check", "--locked", "--lib"];
    for name in PUBLISHED.iter().copied().chain(["whish-cli"]) {
        args.extend(["-p", name]);
    }
    let target = root.join("target").join("msrv");
    let status = Command::new("cargo")
        .current_dir(root)
        .env("CARGO_TARGET_DIR", &target)
        .args(&args)
        .status()
        .map_err(|e| format!("cannot run cargo {version}: {e}"))?;
    if status.success() {
        println!("msrv {version}: the published crates build with Rust {version}");
        Ok(())
    } else {
        Err(format!(
            "the published crates do not build with Rust {version}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn versions_compare_as_numbers_with_a_missing_patch_as_zero() {
        assert_eq!(parse("1.94"), Some(vec![1, 94, 0]));
        assert!(parse("1.100.0") > parse("1.94"));
        assert!(parse("1.94.1") > parse("1.94"));
        assert_eq!(parse("1.x"), None);
    }
}
