//! Clients built from the settings (flags or environment variables). A missing setting is exit 2
//! naming the variable; nothing is sent.

use std::time::Duration;

use whish::collect::CollectClient;
use whish::locations::LocationsClient;
use whish::topup::TopupClient;
use whish::transfer::TransferClient;
use whish::{Policy, SecretString, UserAgent};

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

    pub fn transfer(&self) -> Result<TransferClient, u8> {
        let s = &self.settings;
        let mut b = TransferClient::builder(
            need(&s.transfer_base_url, "WHISH_TRANSFER_BASE_URL")?,
            need(&s.transfer_username, "WHISH_TRANSFER_USERNAME")?,
            SecretString::from(need(&s.transfer_key, "WHISH_TRANSFER_KEY")?),
        )
        .policy(self.policy);
        if let Some(ua) = self.user_agent(false)? {
            b = b.user_agent(ua);
        }
        if self.allow_local_callbacks {
            b = b.allow_local_callbacks();
        }
        b.build().map_err(usage)
    }

    pub fn locations(&self) -> Result<LocationsClient, u8> {
        let s = &self.settings;
        let mut b = LocationsClient::builder(
            need(&s.transfer_base_url, "WHISH_TRANSFER_BASE_URL")?,
            need(&s.transfer_username, "WHISH_TRANSFER_USERNAME")?,
            SecretString::from(need(&s.transfer_key, "WHISH_TRANSFER_KEY")?),
        )
        .policy(self.policy);
        if let Some(ua) = self.user_agent(false)? {
            b = b.user_agent(ua);
        }
        b.build().map_err(usage)
    }

    pub fn collect(&self) -> Result<CollectClient, u8> {
        let s = &self.settings;
        let base = need(&s.collect_base_url, "WHISH_COLLECT_BASE_URL")?;
        let channel = need(&s.collect_channel, "WHISH_COLLECT_CHANNEL")?;
        let secret = SecretString::from(need(&s.collect_secret, "WHISH_COLLECT_SECRET")?);
        let site = need(&s.collect_website_url, "WHISH_COLLECT_WEBSITE_URL")?;
        let ua = self.user_agent(true)?.ok_or(crate::output::USAGE)?;
        let mut b = CollectClient::builder(base, channel, secret, site, ua).policy(self.policy);
        if self.allow_local_callbacks {
            b = b.allow_local_callbacks();
        }
        b.build().map_err(usage)
    }

    pub fn topup(&self) -> Result<TopupClient, u8> {
        let s = &self.settings;
        let base = need(&s.topup_base_url, "WHISH_TOPUP_BASE_URL")?;
        let session = SecretString::from(need(&s.topup_session_id, "WHISH_TOPUP_SESSION_ID")?);
        let token = SecretString::from(need(&s.topup_token, "WHISH_TOPUP_TOKEN")?);
        let ua = self.user_agent(true)?.ok_or(crate::output::USAGE)?;
        TopupClient::builder(base, session, token, ua)
            .policy(self.policy)
            .build()
            .map_err(usage)
    }
}
