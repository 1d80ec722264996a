//! A batch's defaults (sending country, sender, callback address, rows keyed by line), stored
//! beside the batch file on its first send, so that `send` run again, `follow-up` and `cancel`
//! need not retype them, and a default typed differently later is refused rather than used.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cli::BatchArgs;
use crate::output::usage;

/// The defaults of one batch, as its flags give them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from_country: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sender_first_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sender_last_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sender_phone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sender_date_of_birth: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    callback_url: Option<String>,
    #[serde(default)]
    key_by_line: bool,
}

/// The file: every batch of one batch file, by name.
#[derive(Debug, Default, Serialize, Deserialize)]
struct DefaultsFile {
    batches: BTreeMap<String, Stored>,
}

/// `payroll.csv` -> `payroll.defaults.json`, beside it.
pub fn path_of(batch_file: &Path) -> PathBuf {
    crate::payouts::beside(batch_file, "defaults.json")
}

fn read(path: &Path) -> Result<DefaultsFile, u8> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            usage(format!(
                "{} cannot be read ({e}): fix or remove it, and give the batch's defaults as flags",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(DefaultsFile::default()),
        Err(e) => Err(usage(format!("{}: {e}", path.display()))),
    }
}

fn of(a: &BatchArgs) -> Stored {
    Stored {
        from_country: a.from_country,
        sender_first_name: a.sender_first_name.clone(),
        sender_last_name: a.sender_last_name.clone(),
        sender_phone: a.sender_phone.clone(),
        sender_date_of_birth: a.sender_date_of_birth.clone(),
        callback_url: a.callback_url.clone(),
        key_by_line: a.key_by_line,
    }
}

/// Fill the defaults not given from the ones stored for this batch. A default given that
/// differs from the stored one is refused (exit 2): the batch's rows were sent with the stored
/// one, and a row built with another would not be the row the journal holds. Returns whether
/// the batch has defaults stored.
pub fn fill(a: &mut BatchArgs) -> Result<bool, u8> {
    let path = path_of(&a.file);
    let Some(stored) = read(&path)?.batches.remove(&a.batch) else {
        return Ok(false);
    };
    let batch = a.batch.clone();
    let differs = |flag: &str, stored: &dyn std::fmt::Display| {
        usage(format!(
            "batch `{batch}` was first sent with {flag} {stored} (stored in {}): give the same, or leave it out",
            path.display()
        ))
    };
    fn take<T: Clone + PartialEq>(given: &mut Option<T>, stored: &Option<T>) -> Result<(), ()> {
        match (given.as_ref(), stored) {
            (Some(g), Some(s)) if g != s => Err(()),
            (None, Some(s)) => {
                *given = Some(s.clone());
                Ok(())
            }
            _ => Ok(()),
        }
    }
    if take(&mut a.from_country, &stored.from_country).is_err() {
        return Err(differs(
            "--from-country",
            &stored.from_country.unwrap_or_default(),
        ));
    }
    for (flag, given, kept) in [
        (
            "--sender-first-name",
            &mut a.sender_first_name,
            &stored.sender_first_name,
        ),
        (
            "--sender-last-name",
            &mut a.sender_last_name,
            &stored.sender_last_name,
        ),
        ("--sender-phone", &mut a.sender_phone, &stored.sender_phone),
        (
            "--sender-date-of-birth",
            &mut a.sender_date_of_birth,
            &stored.sender_date_of_birth,
        ),
        ("--callback-url", &mut a.callback_url, &stored.callback_url),
    ] {
        if take(given, kept).is_err() {
            return Err(differs(flag, &kept.clone().unwrap_or_default()));
        }
    }
    a.key_by_line |= stored.key_by_line;
    Ok(true)
}

/// Store the batch's defaults beside its file before a row is sent (written whole to a file
/// beside it, then renamed over it). Call it after [`fill`]: what is stored is then kept, and a
/// default given for the first time is added.
pub fn store(a: &BatchArgs) -> Result<(), u8> {
    let path = path_of(&a.file);
    let mut file = read(&path)?;
    let now = of(a);
    if file.batches.get(&a.batch) == Some(&now) {
        return Ok(());
    }
    file.batches.insert(a.batch.clone(), now);
    let text = serde_json::to_vec_pretty(&file).map_err(|e| usage(e.to_string()))?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            usage(format!(
                "cannot store the batch's defaults in {} ({e}); nothing was sent",
                path.display()
            ))
        })
}
