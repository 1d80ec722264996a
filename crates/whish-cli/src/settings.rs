//! Clients built from the settings (flags or environment variables). A missing setting is exit 2
//! naming the variable; nothing is sent.

use std::time::Duration;

use whish::collect::CollectClient;
use whish::locations::LocationsClient;
use whish::topup::TopupClient;
use whish::transfer::TransferClient;
use whish::{ClientSettings, Policy, SecretString, UserAgent};

use crate::cli::{Global, Settings};
use crate::output::usage;

/// Everything a command needs.
pub struct Ctx {
    pub settings: Settings,
    pub policy: Policy,
    pub out: crate::output::Out,
    pub allow_local_callbacks: bool,
}

fn need(v: &Option<String>, var: &str) -> Result<String, u8> {
    match v.as_deref().map(str::trim) {
        Some(s) if !s.is_empty() => Ok(s.to_owned()),
        _ => Err(usage(format!(
            "missing setting {var} (set the environment variable or the flag --{})",
            var.trim_start_matches("WHISH_")
                .to_ascii_lowercase()
                .replace('_', "-")
        ))),
    }
}

/// The retry policy from `--timeout` and `--retries`.
pub fn policy(g: &Global) -> Result<Policy, u8> {
    let mut p = Policy::default();
    if let Some(secs) = g.timeout {
        if !(secs.is_finite() && secs > 0.0 && secs <= 600.0) {
            return Err(usage(
                "--timeout must be a number of seconds between 0 and 600",
            ));
        }
        p.timeouts.attempt = Duration::from_secs_f64(secs);
    }
    if let Some(n) = g.retries {
        if n > 10 {
            return Err(usage("--retries must be at most 10"));
        }
        p.retry.max_retries = n;
    }
    Ok(p)
}

impl Ctx {
    fn user_agent(&self, required: bool) -> Result<Option<UserAgent>, u8> {
        match (&self.settings.user_agent, required) {
            (None, false) => Ok(None),
            (v, _) => {
                let text = need(v, "WHISH_USER_AGENT")?;
                text.parse::<UserAgent>()
                    .map(Some)
                    .map_err(|e| usage(format!("WHISH_USER_AGENT: {e}")))
            }
        }
    }

    /// The shared settings of a client at `base`: policy, User-Agent, local callbacks.
    /// `HTTPS_PROXY`, `ALL_PROXY` and `NO_PROXY` are honoured as reqwest reads them.
    fn client_settings(&self, base: String, ua_required: bool) -> Result<ClientSettings, u8> {
        let mut settings = ClientSettings::new(base).policy(self.policy);
        if let Some(ua) = self.user_agent(ua_required)? {
            settings = settings.user_agent(ua);
        }
        if self.allow_local_callbacks {
            settings = settings.allow_local_callbacks();
        }
        Ok(settings)
    }

    /// The money-transfer account: settings, username and key (locations shares them).
    fn transfer_account(&self) -> Result<(ClientSettings, String, SecretString), u8> {
        let s = &self.settings;
        let base = need(&s.transfer_base_url, "WHISH_TRANSFER_BASE_URL")?;
        Ok((
            self.client_settings(base, false)?,
            need(&s.transfer_username, "WHISH_TRANSFER_USERNAME")?,
            SecretString::from(need(&s.transfer_key, "WHISH_TRANSFER_KEY")?),
        ))
    }

    pub fn transfer(&self) -> Result<TransferClient, u8> {
        let (settings, username, key) = self.transfer_account()?;
        TransferClient::builder(settings)
            .username(username)
            .key(key)
            .build()
            .map_err(|e| setup(&e, "TRANSFER"))
    }

    pub fn locations(&self) -> Result<LocationsClient, u8> {
        let (settings, username, key) = self.transfer_account()?;
        LocationsClient::builder(settings)
            .username(username)
            .key(key)
            .build()
            .map_err(|e| setup(&e, "TRANSFER"))
    }

    pub fn collect(&self) -> Result<CollectClient, u8> {
        let s = &self.settings;
        let base = need(&s.collect_base_url, "WHISH_COLLECT_BASE_URL")?;
        let channel = need(&s.collect_channel, "WHISH_COLLECT_CHANNEL")?;
        let secret = SecretString::from(need(&s.collect_secret, "WHISH_COLLECT_SECRET")?);
        let site = need(&s.collect_website_url, "WHISH_COLLECT_WEBSITE_URL")?;
        let mut builder = CollectClient::builder(self.client_settings(base, true)?)
            .channel(channel)
            .secret(secret)
            .website_url(site);
        if let Some(brand) = &s.collect_brand {
            builder = builder.brand(brand);
        }
        builder.build().map_err(|e| setup(&e, "COLLECT"))
    }

    pub fn topup(&self) -> Result<TopupClient, u8> {
        let s = &self.settings;
        let base = need(&s.topup_base_url, "WHISH_TOPUP_BASE_URL")?;
        let session = SecretString::from(need(&s.topup_session_id, "WHISH_TOPUP_SESSION_ID")?);
        let token = SecretString::from(need(&s.topup_token, "WHISH_TOPUP_TOKEN")?);
        let mut builder = TopupClient::builder(self.client_settings(base, true)?)
            .session_id(session)
            .token(token);
        if let Some(language) = &s.topup_language {
            builder = builder.language(language);
        }
        builder.build().map_err(|e| setup(&e, "TOPUP"))
    }
}

/// The user's data directory for whish (`$XDG_DATA_HOME`, `~/.local/share`; `~/Library/Application
/// Support` on macOS; `%APPDATA%` on Windows), joined with `whish`.
fn data_dir() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = if cfg!(windows) {
        var("APPDATA")
    } else if cfg!(target_os = "macos") {
        var("HOME").map(|h| h.join("Library/Application Support"))
    } else {
        var("XDG_DATA_HOME").or_else(|| var("HOME").map(|h| h.join(".local/share")))
    };
    base.map(|b| b.join("whish"))
}

/// The environment a default journal is named after: `sandbox` when base URLs are set and all
/// of them are on loopback (the built-in sandbox), else `live`. Two files, not one a host: the
/// same environment must open the same journal whichever services a command has settings for
/// (a collect create with only the collect settings, a recover with all three), and each entry
/// records its own service, so that a staging entry is never sent to production anyway.
pub fn environment(base_urls: &[Option<&str>]) -> &'static str {
    // Parsed as the clients parse them: what they would refuse counts as live, never sandbox.
    let loopback: Vec<bool> = base_urls
        .iter()
        .flatten()
        .map(|u| whish::core::BaseUrl::parse(u, "base_url").is_ok_and(|b| b.is_loopback()))
        .collect();
    if !loopback.is_empty() && loopback.iter().all(|l| *l) {
        "sandbox"
    } else {
        "live"
    }
}

/// Where the journal is when `WHISH_JOURNAL` does not say: `whish/journal-<environment>.sqlite`
/// in the user's data directory (see [`environment`]).
pub fn default_journal(environment: &str) -> Option<std::path::PathBuf> {
    data_dir().map(|d| d.join(format!("journal-{environment}.sqlite")))
}

/// The one default journal of 0.3, shared by every environment, when it is still there.
fn former_default_journal() -> Option<std::path::PathBuf> {
    data_dir()
        .map(|d| d.join("journal.sqlite"))
        .filter(|p| p.exists())
}

impl Ctx {
    /// The environment of the base URLs set (see [`environment`]).
    pub fn environment(&self) -> &'static str {
        let s = &self.settings;
        // Every service's base URL counts, the ones this command does not take included (read
        // from their variables): a send and the recovery that settles it must name the same
        // environment whichever settings each takes.
        let var = |given: &Option<String>, name: &str| {
            given
                .clone()
                .or_else(|| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
        };
        let urls = [
            var(&s.transfer_base_url, "WHISH_TRANSFER_BASE_URL"),
            var(&s.collect_base_url, "WHISH_COLLECT_BASE_URL"),
            var(&s.topup_base_url, "WHISH_TOPUP_BASE_URL"),
        ];
        environment(&urls.iter().map(Option::as_deref).collect::<Vec<_>>())
    }

    /// The service's client when its base URL is set (a missing credential is still reported).
    pub fn transfer_quiet(&self) -> Option<TransferClient> {
        self.settings.transfer_base_url.as_ref()?;
        self.transfer().ok()
    }
    /// The same for hosted collect.
    pub fn collect_quiet(&self) -> Option<CollectClient> {
        self.settings.collect_base_url.as_ref()?;
        self.collect().ok()
    }
    /// The same for top-up.
    pub fn topup_quiet(&self) -> Option<TopupClient> {
        self.settings.topup_base_url.as_ref()?;
        self.topup().ok()
    }

    /// The journal, opened (and created) before anything is sent; exit 2 when it cannot be.
    pub async fn journal(&self) -> Result<whish::journal::Journal, u8> {
        // One journal per run: the one flushed at exit holds every outcome recorded in the
        // background (a second one opened here would lose them when the command exits).
        if let Some(j) = OPENED.get() {
            return Ok(j.clone());
        }
        let url = match self.settings.journal.as_deref().map(str::trim) {
            Some(u) if !u.is_empty() => u.to_owned(),
            _ => match default_journal(self.environment()) {
                Some(p) => {
                    if let Some(former) = former_default_journal() {
                        eprintln!(
                            "whish: the default journal is one per environment now ({}); entries in the former default {} are not read here: recover them with WHISH_JOURNAL=sqlite:{}",
                            p.display(),
                            former.display(),
                            former.display()
                        );
                    }
                    format!("sqlite:{}", p.display())
                }
                None => {
                    return Err(usage(
                        "missing setting WHISH_JOURNAL (no data directory: set the environment variable or the flag --journal)",
                    ));
                }
            },
        };
        let journal = whish::journal::Journal::open(&url)
            .await
            .map_err(|e| usage(format!("WHISH_JOURNAL: {e}")))?;
        let _ = OPENED.set(journal.clone());
        Ok(journal)
    }
}

/// The journal this run opened, checked once more when the command ends.
static OPENED: std::sync::OnceLock<whish::journal::Journal> = std::sync::OnceLock::new();

/// Before the command exits: the outcomes the journal records in the background are written
/// (a crash would leave them open for recovery, which is safe; an exit on purpose does not).
pub async fn flush_journal() {
    if let Some(j) = OPENED.get() {
        j.flush().await;
    }
}

/// After the command: a journal whose file was deleted or replaced while it ran did not record
/// what the command did. Say so loudly (the exit status stays the outcome's: a script that
/// treated it as a failure could send the request again with a new key).
pub fn check_journal_at_exit() {
    if let Some(j) = OPENED.get()
        && let Err(e) = j.check()
    {
        eprintln!(
            "whish: error: {}; what this command did is NOT recorded in the journal: keep its output",
            crate::output::printable(&e.to_string())
        );
    }
}

/// A client setting the library refused, reported with the command's own name for it: the
/// library names the setting (`base_url`), the command maps it to its variable.
fn setup(e: &whish::SetupError, service: &str) -> u8 {
    let var = match e.setting.as_str() {
        "user_agent" => "WHISH_USER_AGENT".to_owned(),
        "allow_local_callbacks" => "--allow-local-callbacks".to_owned(),
        "http_client" | "proxy" => {
            "the HTTP client (check HTTPS_PROXY, ALL_PROXY, NO_PROXY)".to_owned()
        }
        other => format!("WHISH_{service}_{}", other.to_ascii_uppercase()),
    };
    usage(format!("{var}: {}", e.reason))
}

#[cfg(test)]
mod tests {
    use super::environment;

    #[test]
    fn a_default_journal_is_named_after_its_environment() {
        assert_eq!(environment(&[None, None, None]), "live");
        assert_eq!(
            environment(&[
                Some("http://127.0.0.1:5000/api"),
                None,
                Some("http://localhost:9/")
            ]),
            "sandbox"
        );
        assert_eq!(
            environment(&[None, Some("https://api.whish.money/itel-service"), None]),
            "live"
        );
        assert_eq!(
            environment(&[
                Some("http://127.0.0.1:5000/api"),
                Some("https://api.whish.money/x"),
                None
            ]),
            "live",
            "one live service makes the environment live"
        );
    }
}
