//! Credentials read from a source on every attempt, so that a rotated key takes effect on the
//! next attempt without a new client (the services say to rotate a key on a suspected leak).
//!
//! A [`SecretSource`] gives the current value of one secret header: a fixed value
//! ([`SecretString`] itself), an environment variable ([`FromEnv`]), a file read again when it
//! changes ([`FromFile`]: a secrets manager's mounted file, a Kubernetes secret), or a closure
//! ([`FromFn`]: a secrets manager's client with its own cache). Each service builder takes one
//! where it takes the secret (`key_from`, `secret_from`, `token_from`, ...).
//!
//! A source that fails, or answers a value a header cannot carry, fails the attempt before
//! anything is sent (a setup error naming the setting); the value never shows in an error.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::SystemTime;

use secrecy::{ExposeSecret, SecretString};

/// Where the current value of a secret comes from; read before every attempt.
pub trait SecretSource: std::fmt::Debug + Send + Sync + 'static {
    /// The current value.
    ///
    /// # Errors
    ///
    /// Why there is none (an unset variable, an unreadable file); never the secret itself.
    fn current(&self) -> Result<SecretString, String>;
}

impl SecretSource for SecretString {
    fn current(&self) -> Result<SecretString, String> {
        Ok(self.clone())
    }
}

/// The value of an environment variable, read on every attempt.
#[derive(Debug, Clone)]
pub struct FromEnv(pub String);

impl SecretSource for FromEnv {
    fn current(&self) -> Result<SecretString, String> {
        match std::env::var(&self.0) {
            Ok(v) if !v.trim().is_empty() => Ok(SecretString::from(v.trim().to_owned())),
            _ => Err(format!("the environment variable {} is not set", self.0)),
        }
    }
}

/// The contents of a file (trimmed), read again whenever the file changes (its modification
/// time, its length, or, on Unix, the file itself: a replacement moved over it, as secret
/// managers do): the next attempt sends the new value.
#[derive(Debug)]
pub struct FromFile {
    path: PathBuf,
    cached: Mutex<Option<(Stamp, SecretString)>>,
}

/// What tells one version of the file from another.
type Stamp = (SystemTime, u64, u64, u64);

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn identity(_: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

impl FromFile {
    /// The secret in the file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> FromFile {
        FromFile {
            path: path.into(),
            cached: Mutex::new(None),
        }
    }
}

impl SecretSource for FromFile {
    fn current(&self) -> Result<SecretString, String> {
        let unreadable = |e: std::io::Error| format!("{} cannot be read: {e}", self.path.display());
        let meta = std::fs::metadata(&self.path).map_err(unreadable)?;
        let (dev, ino) = identity(&meta);
        let stamp: Stamp = (meta.modified().map_err(unreadable)?, meta.len(), dev, ino);
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, value)) = cached.as_ref()
            && *at == stamp
        {
            return Ok(value.clone());
        }
        let text = std::fs::read_to_string(&self.path).map_err(unreadable)?;
        let value = text.trim();
        if value.is_empty() {
            return Err(format!("{} is empty", self.path.display()));
        }
        let value = SecretString::from(value.to_owned());
        *cached = Some((stamp, value.clone()));
        Ok(value)
    }
}

/// A closure that gives the current value (a secrets manager's client, with its own cache).
pub struct FromFn<F>(pub F);

impl<F> SecretSource for FromFn<F>
where
    F: Fn() -> Result<SecretString, String> + Send + Sync + 'static,
{
    fn current(&self) -> Result<SecretString, String> {
        (self.0)()
    }
}

impl<F> std::fmt::Debug for FromFn<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FromFn(..)")
    }
}

/// The header value of a secret: marked sensitive, or why it cannot be one.
pub(crate) fn header_value(secret: &SecretString) -> Result<http::HeaderValue, &'static str> {
    let text = secret.expose_secret();
    if text.trim().is_empty() {
        return Err("is empty");
    }
    let mut v = http::HeaderValue::from_str(text)
        .map_err(|_| "holds characters not allowed in a header")?;
    v.set_sensitive(true);
    Ok(v)
}
