//! Project tasks.
//!
//! - `cargo xtask codegen`: read `codes/*.toml` (one data file per service, every documented
//!   error code) and write each service crate's `src/code.rs` and `docs/errors.md`.
//! - `cargo xtask codegen --check`: fail when any generated file is stale.
//! - `cargo xtask public-api [--check]`: the public surface of every published crate, kept in
//!   `crates/NAME/public-api.txt`; `--check` fails when it is stale (CI runs it).
//! - `cargo xtask bench-budget [--only PACKAGE] [--features F]`: a short run of every bench
//!   (or one package's); fails when a figure
//!   is more than 10 % past its goal in two runs (see `budget.rs`). CI runs it.
//! - `cargo xtask features`: the facade builds with no feature and each feature alone, and a
//!   single-service build contains only that service crate and whish-core (CI runs it).
//! - `cargo xtask footprint [--no-build]`: crate count and cold build time, per service and for all.
//! - `cargo xtask model [--large] [--lie NAME | --list-lies | --every-lie]`: the journal's model
//!   checker (see `model.rs`).
//! - `cargo xtask msrv [--toolchain]`: the `rust-version` holds for every dependency of the
//!   published crates (CI runs it); `--toolchain` also builds them with that Rust (see `msrv.rs`).
//! - `cargo xtask soak --ops N --seed S [--workers W] [--release]`: the fault-injection soak
//!   (`crates/whish-soak`) against the sandbox; exit 1 on any duplicate or lost operation.
//!   `--crash`, `--batch`, `--callbacks` (the receiver soak) and `--slowloris` (the receiver
//!   under a flood) select the other soaks.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

mod budget;
mod codes;
mod features;
mod footprint;
mod model;
mod msrv;
mod public_api;

const USAGE: &str = "usage: cargo xtask codegen [--check] | bench-budget [--only PACKAGE] [--features F] | public-api [--check] | features | footprint [--no-build] | model [--large] [--lie NAME | --list-lies | --every-lie] | msrv [--toolchain] | soak (--ops N --seed S [--workers W] | --crash K ... | --batch N ... | --callbacks N [--journal URL] [--outage SECS] | --slowloris N) [--release]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    let result = match args.first().map(String::as_str) {
        Some("codegen") => codegen(&root, args.iter().any(|a| a == "--check")),
        Some("bench-budget") => budget::run(&root, &args[1..]),
        Some("features") => features::run(&root),
        Some("footprint") => footprint::run(&root, !args.iter().any(|a| a == "--no-build")),
        Some("soak") => soak(&root, &args[1..]),
        Some("model") => model::run(&root, &args[1..]),
        Some("msrv") => msrv::run(&root, &args[1..]),
        Some("public-api") => public_api::run(&root, args.iter().any(|a| a == "--check")),
        _ => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Run the soak binary; `--release` builds it optimised (for N in the thousands).
fn soak(root: &Path, args: &[String]) -> Result<(), String> {
    let release = args.iter().any(|a| a == "--release");
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root)
        .args(["run", "--quiet", "--package", "whish-soak"]);
    if release {
        cmd.arg("--release");
    }
    cmd.arg("--")
        .args(args.iter().filter(|a| *a != "--release"));
    let status = cmd.status().map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err("the soak found duplicates or lost operations, or could not run".into())
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn codegen(root: &Path, check: bool) -> Result<(), String> {
    let files = codes::load_all(&root.join("codes"))?;
    let mut outputs: Vec<(PathBuf, String)> = Vec::new();
    for f in &files {
        let code = rustfmt(&codes::render_rust(f)?)?;
        outputs.push((root.join(&f.crate_path), code));
    }
    outputs.push((root.join("docs/errors.md"), codes::render_markdown(&files)));
    let mut stale = Vec::new();
    for (path, text) in &outputs {
        let current = std::fs::read_to_string(path).unwrap_or_default();
        if current != *text {
            if check {
                stale.push(path.display().to_string());
            } else {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                }
                std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
                eprintln!("wrote {}", path.display());
            }
        }
    }
    if !stale.is_empty() {
        let mut msg = String::from("generated files are stale; run `cargo xtask codegen`:");
        for s in stale {
            let _ = write!(msg, "\n  {s}");
        }
        return Err(msg);
    }
    Ok(())
}

fn rustfmt(source: &str) -> Result<String, String> {
    use std::io::Write;
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2024", "--emit", "stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run rustfmt: {e}"))?;
    child
        .stdin
        .take()
        .ok_or("rustfmt stdin")?
        .write_all(source.as_bytes())
        .map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "rustfmt failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

/// Runs cargo in the workspace and returns its stdout; a failure carries its stderr.
fn cargo(root: &Path, args: &[&str]) -> Result<String, String> {
    run_cargo(root, args, None)
}

/// Like [`cargo`], with its own target directory.
fn cargo_with_target(root: &Path, args: &[&str], target: &Path) -> Result<String, String> {
    run_cargo(root, args, Some(target))
}

fn run_cargo(root: &Path, args: &[&str], target: Option<&Path>) -> Result<String, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root).args(args);
    if let Some(t) = target {
        cmd.env("CARGO_TARGET_DIR", t);
    }
    let out = cmd.output().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}
