//! Running a program of the workspace as a user would, with a clean environment.

use std::process::Command;

/// The environment variables a test run of the `whish` command must not inherit from the
/// developer's shell: proxies and every setting the command reads.
pub const SETTINGS_VARS: [&str; 24] = [
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "WHISH_TRANSFER_BASE_URL",
    "WHISH_TRANSFER_USERNAME",
    "WHISH_TRANSFER_KEY",
    "WHISH_COLLECT_BASE_URL",
    "WHISH_COLLECT_CHANNEL",
    "WHISH_COLLECT_SECRET",
    "WHISH_COLLECT_WEBSITE_URL",
    "WHISH_TOPUP_BASE_URL",
    "WHISH_TOPUP_SESSION_ID",
    "WHISH_TOPUP_TOKEN",
    "WHISH_TOPUP_LANGUAGE",
    "WHISH_COLLECT_BRAND",
    "WHISH_SANDBOX_CALLBACK_KEY",
    "WHISH_USER_AGENT",
    "WHISH_JOURNAL",
    "RUST_LOG",
];

/// What a run printed and how it exited.
#[derive(Debug)]
pub struct Run {
    /// The exit code; -1 when a signal ended it.
    pub code: i32,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
}

impl Run {
    /// What a finished process printed and how it exited.
    pub fn of(out: std::process::Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Standard output as JSON.
    ///
    /// # Panics
    /// When it is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }
}

/// `program` with none of [`SETTINGS_VARS`] inherited, run by `runner` when one is given (its
/// program and arguments before `program`'s path: `["faketime", "-f", "+25h"]`).
pub fn clean_command(program: &str, runner: Option<&[&str]>) -> Command {
    let mut cmd = match runner {
        Some([wrapper, before @ ..]) => {
            let mut c = Command::new(wrapper);
            c.args(before).arg(program);
            c
        }
        _ => Command::new(program),
    };
    for v in SETTINGS_VARS {
        cmd.env_remove(v);
    }
    cmd
}
