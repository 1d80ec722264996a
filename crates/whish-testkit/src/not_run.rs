//! Tests that need something the machine may lack (root, a command, a PostgreSQL server) say
//! so when they cannot run; under CI (`CI=true`) they fail instead, so that CI never passes a
//! test it did not run.

/// Whether this run is CI's (`CI=true`), where every part of every test must run.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Report that `what` of `test` did not run, and why. Under CI this panics: CI installs what
/// the tests need (`.ci/run`), so a part that cannot run there is a broken set-up.
///
/// # Panics
/// Under CI.
pub fn not_run(test: &str, what: &str, why: &str) {
    assert!(
        !under_ci(),
        "{test}: {what} cannot run under CI=true: {why}"
    );
    eprintln!("{test}: {what} NOT RUN: {why}");
}

/// Whether the command `program` can be started here (`program -version` or `--version`).
pub fn has_command(program: &str) -> bool {
    ["--version", "-version"].iter().any(|flag| {
        std::process::Command::new(program)
            .arg(flag)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok()
    })
}
