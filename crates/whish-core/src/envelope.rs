//! The envelope every service answers with.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// The `code` field of an envelope.
///
/// It arrives as null (success), as a string (a failure identifier), or as the number 500 (Pending).
/// The string `"500"` is read as Pending too. Any other number is kept as its decimal text, so a
/// code such as `400` is a failure code whether it was sent as a number or a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Code {
    /// `null` or a missing key: no error.
    #[default]
    Null,
    /// The value 500 (number or string): the outcome is unknown, reconcile; do not mark failed.
    Pending,
    /// Any other value: the service's error identifier, exactly as sent.
    Failure(String),
}

impl Code {
    /// The code as the service wrote it: `None` for null, `"500"` for Pending.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Code::Null => None,
            Code::Pending => Some("500"),
            Code::Failure(s) => Some(s),
        }
    }

    /// Whether this code means Pending.
    pub fn is_pending(&self) -> bool {
        matches!(self, Code::Pending)
    }

    fn from_text(s: &str) -> Code {
        if s.trim() == "500" {
            Code::Pending
        } else {
            Code::Failure(s.to_owned())
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str().unwrap_or("null"))
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Code::Null => s.serialize_none(),
            Code::Pending => s.serialize_u16(500),
            Code::Failure(c) => s.serialize_str(c),
        }
    }
}

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Code, D::Error> {
        struct CodeVisitor;
        impl<'de> Visitor<'de> for CodeVisitor {
            type Value = Code;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("null, a string or a number")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Code, E> {
                Ok(Code::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Code, E> {
                Ok(Code::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Code, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Code, E> {
                Ok(Code::from_text(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Code, E> {
                Ok(Code::from_text(&v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Code, E> {
                Ok(Code::from_text(&v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Code, E> {
                if v == 500.0 {
                    Ok(Code::Pending)
                } else {
                    Ok(Code::Failure(v.to_string()))
                }
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Code, E> {
                Ok(Code::Failure(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Code, A::Error> {
                // serde_json's arbitrary_precision representation of a number, if some other crate
                // in the build turned that feature on.
                let mut found = None;
                while let Some((k, v)) = map.next_entry::<String, Value>()? {
                    found = Some(match v {
                        Value::String(s) if k.starts_with("$serde_json") => s,
                        other => other.to_string(),
                    });
                }
                Ok(found.map_or(Code::Null, |s| Code::from_text(&s)))
            }
        }
        d.deserialize_any(CodeVisitor)
    }
}

/// The optional display message: `title`, `message`, and any other keys the service adds
/// (the top-up pay success carries `yesButton` and `noButton`).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Dialog {
    /// Short title, for display only.
    pub title: Option<String>,
    /// Human-readable message, for display only. Never branch on it: match the code.
    pub message: Option<String>,
    /// Every other key of the dialog object, as sent.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// Read in one pass. (A derived reader with `flatten` first copies the whole object into an
/// intermediate buffer: six allocations more on a reply with a dialog.)
impl<'de> Deserialize<'de> for Dialog {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dialog, D::Error> {
        struct DialogVisitor;
        impl<'de> Visitor<'de> for DialogVisitor {
            type Value = Dialog;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a dialog object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Dialog, A::Error> {
                let mut dialog = Dialog::default();
                let (mut title, mut message) = (false, false);
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    match key.as_ref() {
                        "title" if !title => {
                            title = true;
                            dialog.title = map.next_value()?;
                        }
                        "message" if !message => {
                            message = true;
                            dialog.message = map.next_value()?;
                        }
                        "title" | "message" => {
                            return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
                        }
                        _ => {
                            let value = map.next_value()?;
                            dialog.other.insert(key.into_owned(), value);
                        }
                    }
                }
                Ok(dialog)
            }
        }
        d.deserialize_map(DialogVisitor)
    }
}

/// An object key, borrowed from the body when it has no escapes.
struct Key<'de>(std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key<'de>, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl Dialog {
    /// The text to show in one line: the message, or the title when there is no message.
    pub fn text(&self) -> Option<&str> {
        self.message
            .as_deref()
            .filter(|m| !m.trim().is_empty())
            .or(self.title.as_deref().filter(|t| !t.trim().is_empty()))
    }
}

impl fmt::Display for Dialog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.title, &self.message) {
            (Some(t), Some(m)) => write!(f, "{t}: {m}"),
            (Some(t), None) => f.write_str(t),
            (None, Some(m)) => f.write_str(m),
            (None, None) => Ok(()),
        }
    }
}

/// What the status/code pair of an envelope means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `status` true: process `data`.
    Success,
    /// `code` 500 (number or string): outcome unknown, reconcile, never mark failed.
    Pending,
    /// `status` false with any other code (or none): a failure; read `code` and `dialog`.
    Failed,
}

/// One decoded service reply.
///
/// A missing key counts as null: a real failure reply omits `data` entirely. Unknown keys are
/// ignored. `data` is decoded into `T` only when it is present and not null; on a failed or
/// pending reply a `data` that does not fit `T` is dropped rather than failing the decode, since
/// the code is what the caller needs there.
///
/// All three services answer HTTP 200 with the same outer object:
/// `status` says whether the *call* worked, `code` is null on success, an error identifier on
/// failure, or the value 500 meaning **Pending** (outcome unknown, never a failure). `data` carries
/// the payload, `dialog` an optional display message, `extra` and `actions` are reserved, and the
/// idempotent operations of the collect and top-up services add `retrieved` (true when the reply
/// replays an already-processed request).
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope<T> {
    /// True when the call worked. A different field from any `data.status`.
    pub status: bool,
    /// Null, a failure identifier, or Pending.
    pub code: Code,
    /// The payload.
    pub data: Option<T>,
    /// Optional display message. (This and the two reserved fields are usually null, and boxed
    /// so that an envelope stays small to move.)
    pub dialog: Option<Box<Dialog>>,
    /// Reserved by the services; kept as sent (the collect service puts a new price here on
    /// `purchase.confirm`).
    pub extra: Option<Box<Value>>,
    /// Reserved by the services; kept as sent.
    pub actions: Option<Box<Value>>,
    /// Present on idempotent operations: true when this reply replays an already-processed
    /// request. `None` when the key was absent.
    pub retrieved: Option<bool>,
}

impl<T> Envelope<T> {
    /// How the status/code pair reads. Code 500 is Pending even if `status` were true.
    pub fn outcome(&self) -> Outcome {
        if self.code.is_pending() {
            Outcome::Pending
        } else if self.status {
            Outcome::Success
        } else {
            Outcome::Failed
        }
    }

    /// True when the reply replays an already-processed request.
    pub fn is_replay(&self) -> bool {
        self.retrieved == Some(true)
    }
}

/// The envelope as it arrives. Read with `D = T` in one pass (the fast path for the common reply
/// whose `data` fits `T`), or with `D = &RawValue` to decode `data` in a second step, which names
/// the failing JSON path and tolerates a misshapen `data` on a failed or pending reply.
///
/// The fields that are usually null are boxed, here and in the [`Envelope`]: serde moves the
/// struct it builds several times on its way out, and a small one is copied in registers instead
/// of by `memmove` (a tenth of a small reply's decode).
#[derive(Deserialize)]
#[serde(bound = "D: Deserialize<'de>")]
struct Wire<D> {
    #[serde(default)]
    status: Option<bool>,
    #[serde(default)]
    code: Option<Box<Code>>,
    #[serde(default)]
    data: Option<D>,
    #[serde(default)]
    dialog: Option<Box<Dialog>>,
    #[serde(default)]
    extra: Option<Box<Value>>,
    #[serde(default)]
    actions: Option<Box<Value>>,
    #[serde(default)]
    retrieved: Option<bool>,
}

impl<D> Wire<D> {
    /// The envelope, or `None` without a `status` key (then it is not the service envelope).
    /// A null `data`, `extra` or `actions` has already been read as `None`.
    fn into_envelope(self) -> Option<Envelope<D>> {
        Some(Envelope {
            status: self.status?,
            code: self.code.map_or(Code::Null, |c| *c),
            data: self.data,
            dialog: self.dialog,
            extra: self.extra,
            actions: self.actions,
            retrieved: self.retrieved,
        })
    }
}

impl<D> Envelope<D> {
    fn with_data<T>(self, data: Option<T>) -> Envelope<T> {
        Envelope {
            status: self.status,
            code: self.code,
            data,
            dialog: self.dialog,
            extra: self.extra,
            actions: self.actions,
            retrieved: self.retrieved,
        }
    }
}

/// Why a body could not be read as an envelope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at `{path}`: {message}")]
#[non_exhaustive]
pub struct EnvelopeDecodeError {
    /// The JSON path that failed (`data.list[3].amount`), `.` for the whole body.
    pub path: String,
    /// What was wrong there.
    pub message: String,
    /// True when the body was not an envelope at all (not JSON, or JSON without `status`); false
    /// when the envelope was fine but `data` did not match the documented shape.
    pub not_an_envelope: bool,
}

impl<T: DeserializeOwned> Envelope<T> {
    /// Decode a reply body.
    ///
    /// ```
    /// use whish_core::{Envelope, Outcome};
    /// let e: Envelope<serde_json::Value> =
    ///     Envelope::from_slice(br#"{"status":false,"code":500,"dialog":null}"#).unwrap();
    /// assert_eq!(e.outcome(), Outcome::Pending);
    /// ```
    ///
    /// # Errors
    ///
    /// An `EnvelopeDecodeError` when the body is not the service's envelope.
    pub fn from_slice(body: &[u8]) -> Result<Envelope<T>, EnvelopeDecodeError> {
        if let Some(envelope) = serde_json::from_slice::<Wire<T>>(body)
            .ok()
            .and_then(Wire::into_envelope)
        {
            return Ok(envelope);
        }
        let raw: Wire<&RawValue> =
            serde_json::from_slice(body).map_err(|e| EnvelopeDecodeError {
                path: crate::json_path::of_error(body, &e),
                message: e.to_string(),
                not_an_envelope: true,
            })?;
        let Some(raw) = raw.into_envelope() else {
            return Err(EnvelopeDecodeError {
                path: ".".into(),
                message: "the body has no `status` key, so it is not the service envelope".into(),
                not_an_envelope: true,
            });
        };
        let data = raw.data;
        let mut envelope = raw.with_data(None);
        if let Some(data) = data {
            match serde_json::from_str::<T>(data.get()) {
                Ok(v) => envelope.data = Some(v),
                Err(e) if envelope.outcome() == Outcome::Success => {
                    let inner = crate::json_path::of_error(data.get().as_bytes(), &e);
                    let path = if inner == "." {
                        "data".to_owned()
                    } else {
                        format!("data.{inner}")
                    };
                    return Err(EnvelopeDecodeError {
                        path,
                        message: e.to_string(),
                        not_an_envelope: false,
                    });
                }
                Err(_) => {}
            }
        }
        Ok(envelope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(body: &str) -> Envelope<Value> {
        Envelope::from_slice(body.as_bytes()).expect("decodes")
    }

    #[test]
    fn dialog_keeps_title_message_and_every_other_key() {
        let e = env(
            r#"{"status":true,"dialog":{"title":"Success","message":"Top-up \u0063ompleted.","yes\u0042utton":null,"noButton":{"x":1}}}"#,
        );
        let d = e.dialog.expect("dialog");
        assert_eq!(d.title.as_deref(), Some("Success"));
        assert_eq!(d.message.as_deref(), Some("Top-up completed."));
        assert_eq!(
            d.other.get("yesButton"),
            Some(&Value::Null),
            "escaped key read"
        );
        assert_eq!(d.other.get("noButton"), Some(&json!({"x": 1})));
        assert_eq!(
            serde_json::to_value(&d).expect("writes"),
            json!({"title":"Success","message":"Top-up completed.","yesButton":null,"noButton":{"x":1}})
        );
        let d = env(r#"{"status":true,"dialog":{"title":null}}"#)
            .dialog
            .expect("dialog");
        assert_eq!(*d, Dialog::default());
    }

    #[test]
    fn dialog_with_a_wrong_title_or_a_repeated_one_is_not_read() {
        for dialog in [r#"{"title":5}"#, r#"{"title":"a","title":"b"}"#, "[]"] {
            let body = format!(r#"{{"status":true,"dialog":{dialog}}}"#);
            assert!(serde_json::from_str::<Dialog>(dialog).is_err(), "{dialog}");
            assert!(
                Envelope::<Value>::from_slice(body.as_bytes()).is_err(),
                "{body}"
            );
        }
    }

    #[test]
    fn code_500_number_is_pending() {
        let e = env(r#"{"status":false,"code":500,"data":null,"dialog":null}"#);
        assert_eq!(e.code, Code::Pending);
        assert_eq!(e.outcome(), Outcome::Pending);
    }

    #[test]
    fn code_500_string_is_pending() {
        let e = env(r#"{"status":false,"code":"500"}"#);
        assert_eq!(e.outcome(), Outcome::Pending);
        assert_eq!(e.code.as_str(), Some("500"));
    }

    #[test]
    fn code_500_float_is_pending() {
        assert_eq!(env(r#"{"status":false,"code":500.0}"#).code, Code::Pending);
    }

    #[test]
    fn code_null_and_missing_are_null() {
        assert_eq!(
            env(r#"{"status":true,"code":null,"data":{}}"#).code,
            Code::Null
        );
        assert_eq!(env(r#"{"status":true,"data":{}}"#).code, Code::Null);
        assert_eq!(
            env(r#"{"status":true,"data":{}}"#).outcome(),
            Outcome::Success
        );
    }

    #[test]
    fn code_string_is_failure() {
        let e = env(
            r#"{"status":false,"code":"transfer.not_exists","dialog":{"title":"T","message":"M"}}"#,
        );
        assert_eq!(e.code, Code::Failure("transfer.not_exists".into()));
        assert_eq!(e.outcome(), Outcome::Failed);
        let d = e.dialog.expect("dialog");
        assert_eq!(d.title.as_deref(), Some("T"));
        assert_eq!(d.message.as_deref(), Some("M"));
    }

    #[test]
    fn code_400_string_and_number_are_the_same_failure() {
        assert_eq!(
            env(r#"{"status":false,"code":"400"}"#).code,
            Code::Failure("400".into())
        );
        assert_eq!(
            env(r#"{"status":false,"code":400}"#).code,
            Code::Failure("400".into())
        );
    }

    #[test]
    fn failure_without_data_key() {
        let e = env(r#"{"status":false,"code":"error","dialog":{"title":"Error","message":"x"}}"#);
        assert_eq!(e.data, None);
        assert_eq!(e.retrieved, None);
    }

    #[test]
    fn data_shapes() {
        assert_eq!(
            env(r#"{"status":true,"data":[1,2]}"#).data,
            Some(json!([1, 2]))
        );
        assert_eq!(
            env(r#"{"status":true,"data":{"a":1}}"#).data,
            Some(json!({"a":1}))
        );
        assert_eq!(env(r#"{"status":true,"data":null}"#).data, None);
        assert_eq!(env(r#"{"status":true,"data":"x"}"#).data, Some(json!("x")));
        assert_eq!(env(r#"{"status":true,"data":7}"#).data, Some(json!(7)));
        let v: Envelope<Vec<String>> =
            Envelope::from_slice(br#"{"status":true,"data":["CASH_COLLECTION","MOBILE_WALLET"]}"#)
                .expect("decodes");
        assert_eq!(v.data.expect("data").len(), 2);
    }

    #[test]
    fn dialog_keeps_extra_keys() {
        let e = env(
            r#"{"status":true,"data":{},"dialog":{"title":"t","message":"m","yesButton":null,"noButton":"No"}}"#,
        );
        let d = e.dialog.expect("dialog");
        assert_eq!(d.other.get("noButton"), Some(&json!("No")));
        assert!(d.other.contains_key("yesButton"));
    }

    #[test]
    fn unknown_keys_ignored_and_reserved_kept() {
        let e =
            env(r#"{"status":true,"data":{},"brandNew":1,"extra":{"price":12.5},"actions":null}"#);
        assert_eq!(e.extra.as_deref(), Some(&json!({"price":12.5})));
        assert_eq!(e.actions, None);
    }

    #[test]
    fn retrieved_flag() {
        assert_eq!(
            env(r#"{"status":true,"data":null,"retrieved":true}"#).retrieved,
            Some(true)
        );
        assert!(env(r#"{"status":true,"data":null,"retrieved":true}"#).is_replay());
        assert_eq!(
            env(r#"{"status":true,"data":null,"retrieved":false}"#).retrieved,
            Some(false)
        );
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Quote {
        #[allow(dead_code)]
        fees: f64,
    }

    #[test]
    fn decode_error_names_the_path() {
        let err = Envelope::<Quote>::from_slice(br#"{"status":true,"data":{"fees":"x"}}"#)
            .expect_err("bad data");
        assert_eq!(err.path, "data.fees");
        assert!(!err.not_an_envelope);
    }

    #[test]
    fn failed_reply_with_odd_data_still_decodes() {
        let e = Envelope::<Quote>::from_slice(br#"{"status":false,"code":"x","data":{"y":1}}"#)
            .expect("decodes");
        assert_eq!(e.data, None);
        assert_eq!(e.outcome(), Outcome::Failed);
    }

    #[test]
    fn not_an_envelope() {
        let err = Envelope::<Value>::from_slice(b"<html>502 Bad Gateway</html>").expect_err("html");
        assert!(err.not_an_envelope);
        let err = Envelope::<Value>::from_slice(br#"{"error":"nope"}"#).expect_err("no status");
        assert!(err.not_an_envelope);
    }
}
