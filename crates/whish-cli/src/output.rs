//! Printing results and failures, and the exit status contract.

use std::fmt::Write as _;
use std::process::ExitCode;

use serde::Serialize;
use serde_json::Value;

use crate::printed::Failure;
use whish::core::{Error, ErrorCode, ValidationKind, verdict::Verdict};

/// A sum of `currency` (its code) as the command prints every sum: at the currency's precision,
/// with exactly its decimals (`2481.00` USD, `150000` LBP).
pub fn money(currency: &str, value: whish::Decimal) -> String {
    whish::Currency::from_code(currency).money_text(value)
}

/// A time as the command prints it: RFC 3339, in the offset it carries.
pub fn rfc3339(t: time::OffsetDateTime) -> Option<String> {
    t.format(&time::format_description::well_known::Rfc3339)
        .ok()
}

/// Exit statuses.
/// The service accepted or confirmed it.
pub const OK: u8 = 0;
/// The service refused it: final, nothing done.
pub const REFUSED: u8 = 1;
/// Nothing was sent: bad usage, configuration or input.
pub const NOT_SENT: u8 = 2;
/// Pending: the outcome is unknown, not failed.
pub const PENDING: u8 = 3;
/// The outcome is unknown: the request may have been applied.
pub const UNKNOWN: u8 = 4;
/// A payouts run stopped before its end.
pub const STOPPED: u8 = 5;
/// A reconciliation found differences.
pub const DIFFERENCES: u8 = 6;

/// Where and how results go.
#[derive(Debug, Clone, Copy)]
pub struct Out {
    pub json: bool,
}

/// The largest integer every JSON reader holds exactly (2^53: beyond it, a reader that keeps
/// numbers as doubles, such as jq 1.6 or JavaScript, rounds it).
const EXACT: u64 = 1 << 53;

/// `v` with every integer beyond [`EXACT`] (a Request-id, a transfer number) written as a JSON
/// string: the one way the command prints an identifier, so that a script reading it back (and
/// passing it to `--request-id`) gets the same id, never a neighbour.
pub fn ids_exact(v: &Value) -> Value {
    match v {
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) if u > EXACT => Value::String(u.to_string()),
            (None, Some(i)) if i.unsigned_abs() > EXACT => Value::String(i.to_string()),
            _ => v.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(ids_exact).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), ids_exact(v))).collect())
        }
        _ => v.clone(),
    }
}

impl Out {
    /// Print one JSON line on stdout (identifiers as [`ids_exact`] writes them).
    pub fn line(&self, v: &impl Serialize) {
        println!("{}", ids_exact(&value(v)));
    }

    /// Print a result on stdout (one of [`crate::printed`]'s objects).
    pub fn print(&self, v: &impl Serialize) {
        let v = &ids_exact(&value(v));
        if self.json {
            // The encoder escapes control characters; the direction overrides too, as `\uXXXX`
            // (still valid JSON), so a terminal never reorders what it shows.
            let text = serde_json::to_string_pretty(v).unwrap_or_default();
            let mut safe = String::with_capacity(text.len());
            for c in text.chars() {
                if is_direction_override(c) {
                    let _ = write!(safe, "\\u{:04x}", u32::from(c));
                } else {
                    safe.push(c);
                }
            }
            println!("{safe}");
        } else {
            print!("{}", table(v, 0));
        }
    }

    /// Print a success and return 0.
    pub fn success(&self, v: &impl Serialize) -> u8 {
        self.print(v);
        OK
    }

    /// Print a failure object on stdout and one line on stderr; return `status`.
    pub fn failure(&self, v: &impl Serialize, hint: &str, status: u8) -> u8 {
        self.print(v);
        eprintln!("whish: {}", printable(&in_the_commands_words(hint)));
        status
    }
}

/// `v` as a JSON value (a type the command prints always serializes).
pub fn value(v: &impl Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// A command's result: the value printed on success, or an exit status already reported.
pub type Done = Result<u8, u8>;

/// Refused before sending: message on stderr, exit 2.
pub fn usage(message: impl std::fmt::Display) -> u8 {
    eprintln!(
        "whish: {}; nothing was sent",
        printable(&in_the_commands_words(&message.to_string()))
    );
    NOT_SENT
}

/// The library's words for a remedy (its Rust API) and the command's (its flags): a hint the
/// command prints names what its user can type.
const THE_COMMANDS_WORDS: &[(&str, &str)] = &[
    (
        "build the client with `ClientSettings::allow_local_callbacks()`",
        "add --allow-local-callbacks",
    ),
    (
        "ClientSettings::allow_local_callbacks",
        "--allow-local-callbacks",
    ),
    (" (Batch::allow_repeats)", ""),
    (" (or use Batch::with_format)", ""),
    ("Clients::adopt_untargeted(true)", "--adopt-untargeted"),
];

/// `text` with every Rust API item of [`THE_COMMANDS_WORDS`] said as the command says it.
pub fn in_the_commands_words(text: &str) -> String {
    THE_COMMANDS_WORDS
        .iter()
        .fold(text.to_owned(), |t, (rust, ours)| t.replace(rust, ours))
}

/// The Unicode embeddings, overrides and isolates that reorder how a terminal shows text.
fn is_direction_override(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Text from the network made safe for a terminal: control characters (escape sequences that
/// would retitle the window or clear the screen, line breaks) and the Unicode direction
/// overrides are shown escaped, never interpreted. JSON output is already escaped by the encoder.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() || is_direction_override(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// The exit status of a verdict: the one mapping, so that the command's exit code and the
/// journal's state (both functions of the verdict alone) always agree.
///
/// | verdict | exit | journal state |
/// |---|---|---|
/// | accepted | 0 | `accepted` |
/// | refused | 1 | `refused` |
/// | not-sent | 2 | `refused` (`not-sent`), or unchanged for a resend |
/// | pending | 3 | `pending` |
/// | unknown | 4 | `may-have-arrived` |
pub fn exit_code(verdict: Verdict) -> u8 {
    match verdict {
        Verdict::Accepted => OK,
        Verdict::Refused => REFUSED,
        Verdict::NothingSent => NOT_SENT,
        Verdict::Pending => PENDING,
        _ => UNKNOWN,
    }
}

/// Report an SDK error and return its exit status, which is [`exit_code`] of its verdict.
pub fn error<C: ErrorCode>(out: &Out, e: &Error<C>) -> u8 {
    error_of(out, e, Call::Change)
}

/// What the failed call was: its remedy depends on it.
enum Call {
    /// A send, cancel, create, refund or pay: its error's own advice (resend, confirm).
    Change,
    /// A read that names nothing but its parameters (a balance, a list).
    Read,
    /// A read of something the caller named (`{"requestId": ...}`).
    ReadOf(Value),
}

/// Report the error of a read about something named by the caller (`asked`, such as
/// `{"requestId": ...}`): the failure names what was asked for, never the read's own request
/// key, which identifies nothing the caller knows.
pub fn read_error<C: ErrorCode>(out: &Out, e: &Error<C>, asked: &impl Serialize) -> u8 {
    error_of(out, e, Call::ReadOf(value(asked)))
}

/// Report the error of a read that names nothing but its parameters (a balance, a list): its
/// remedy is to read again, never the resend or confirm advice a change's error carries.
pub fn read_failed<C: ErrorCode>(out: &Out, e: &Error<C>) -> u8 {
    error_of(out, e, Call::Read)
}

fn error_of<C: ErrorCode>(out: &Out, e: &Error<C>, call: Call) -> u8 {
    // A read changes nothing: its remedy is to read again (checking what was asked, when it
    // named something), never the resend or confirm advice a change's error carries. A failure
    // code keeps its own handling. A read that names nothing keeps its own hint for a Pending
    // answer and for a refusal of the request itself (a 4xx page: correct it, do not repeat
    // it); only a failure on the way (a connection, a proxy's or the service's 5xx) is read
    // again.
    let on_the_way = match e {
        Error::Transport(_) => true,
        Error::Http(h) => h.is_server_side() || h.after_possible_delivery,
        _ => false,
    };
    // The cause of a failed connection is in its message, not in its summary line.
    let what = match e {
        Error::Transport(t) => format!("{}: {}", e, t.message),
        other => other.to_string(),
    };
    let read_hint = match (e, &call) {
        (Error::Failed(_), _) | (_, Call::Change) => None,
        (_, Call::ReadOf(_)) => Some(format!(
            "{what}: a read changes nothing; check what was asked, then read it again"
        )),
        (_, Call::Read) if on_the_way => {
            Some(format!("{what}: a read changes nothing; read it again"))
        }
        (_, Call::Read) => None,
    };
    let out = &Asking {
        out,
        asked: match call {
            Call::ReadOf(asked) => Some(asked),
            Call::Change | Call::Read => None,
        },
        read_hint,
    };
    let verdict = e.verdict();
    let status = exit_code(verdict);
    let outcome = verdict.as_str();
    match e {
        Error::Failed(f) => out.failure(
            &Failure::Failed {
                outcome,
                code: &f.raw,
                dialog: f.dialog.as_ref(),
                extra: f.extra.as_ref(),
                retrieved: f.retrieved,
                endpoint: f.endpoint,
                idempotency_key: f.idempotency_key.as_deref(),
            },
            &if verdict == Verdict::Refused {
                format!("{} answered `{}`: {}", f.endpoint, f.raw, f.code.handling())
            } else {
                format!("{e}: {}", e.hint())
            },
            status,
        ),
        Error::Pending(p) => out.failure(
            &Failure::Pending {
                outcome,
                code: "500",
                dialog: p.dialog.as_ref(),
                retrieved: p.retrieved,
                endpoint: p.endpoint,
                idempotency_key: p.idempotency_key.as_deref(),
            },
            &match &p.idempotency_key {
                Some(key) => format!("Pending (key {key}): {}", e.hint()),
                None => format!("Pending: {}", e.hint()),
            },
            status,
        ),
        Error::Http(h) => out.failure(
            &Failure::Http {
                outcome,
                http_status: h.status,
                body: &h.body_prefix,
                endpoint: h.endpoint,
                idempotency_key: h.idempotency_key.as_deref(),
                after_possible_delivery: h.after_possible_delivery,
            },
            &format!("{e}: {}", e.hint()),
            status,
        ),
        Error::Transport(t) => out.failure(
            &Failure::Transport {
                outcome,
                error: "transport",
                message: &t.message,
                may_have_reached: t.may_have_reached,
                endpoint: t.endpoint,
                idempotency_key: t.idempotency_key.as_deref(),
                attempts: t.attempts,
            },
            &format!("{}; {}", t.message, e.hint()),
            status,
        ),
        Error::Validation(v) if matches!(v.kind, ValidationKind::NotPublicUrl { .. }) => {
            usage(format!(
                "{v}: the service cannot call it; use a public address (against the local sandbox: --allow-local-callbacks)"
            ));
            status
        }
        Error::Validation(v) => {
            usage(v);
            status
        }
        Error::Setup(s) => {
            usage(s);
            status
        }
        Error::Record(r) => out.failure(
            &Failure::Journal {
                outcome,
                error: "journal",
                message: r.to_string(),
                endpoint: e.endpoint(),
                idempotency_key: e.idempotency_key(),
            },
            &r.to_string(),
            status,
        ),
        other => out.failure(
            &Failure::Decode {
                outcome,
                error: "decode",
                message: other.to_string(),
            },
            &e.hint(),
            status,
        ),
    }
}

/// Where a failure goes, what the failed read was asked about, and a read's hint in place of
/// the error's own.
struct Asking<'a> {
    out: &'a Out,
    asked: Option<Value>,
    read_hint: Option<String>,
}

impl Asking<'_> {
    fn failure(&self, v: &Failure<'_>, hint: &str, status: u8) -> u8 {
        let hint = self.read_hint.as_deref().unwrap_or(hint);
        let Some(asked) = &self.asked else {
            return self.out.failure(v, hint, status);
        };
        let mut v = value(v);
        if let Some(o) = v.as_object_mut() {
            o.remove("idempotencyKey");
            o.insert("asked".into(), asked.clone());
        }
        let about = asked
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| {
                format!(
                    "{k} {}",
                    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        self.out
            .failure(&v, &format!("{hint} (asked about {about})"), status)
    }
}

/// Turn a status into the process exit code.
pub fn exit(status: u8) -> ExitCode {
    ExitCode::from(status)
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => printable(s),
        Value::Null => String::new(),
        other => printable(&other.to_string()),
    }
}

/// The terminal columns `text` takes: combining marks none, wide characters two.
fn columns(text: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(text)
}

/// The widest cell, in characters, of a column that is read as a name or a value; a column
/// with a wider one is prose.
const PROSE: usize = 48;

/// A readable table: arrays of objects as columns, objects as key/value lines.
pub fn table(v: &Value, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut s = String::new();
    match v {
        Value::Array(rows) if rows.iter().all(Value::is_object) && !rows.is_empty() => {
            let mut raw_keys: Vec<&String> = Vec::new();
            for r in rows {
                for k in r.as_object().into_iter().flat_map(|o| o.keys()) {
                    if !raw_keys.contains(&k) {
                        raw_keys.push(k);
                    }
                }
            }
            // Nested lists and objects are tables of their own, under their row, never JSON
            // text in a cell.
            let nested = |k: &str| {
                rows.iter()
                    .any(|r| matches!(r[k], Value::Array(_) | Value::Object(_)))
            };
            let (mut flat, deep): (Vec<&String>, Vec<&String>) =
                raw_keys.iter().partition(|k| !nested(k.as_str()));
            // Prose (a column with a cell longer than PROSE) goes last, so that the short
            // columns that name each row are read first, not pushed off the screen.
            let long = |k: &str| rows.iter().any(|r| scalar(&r[k]).chars().count() > PROSE);
            flat.sort_by_key(|k| long(k.as_str()));
            let keys: Vec<String> = flat.iter().map(|k| printable(k)).collect();
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|r| flat.iter().map(|k| scalar(&r[k.as_str()])).collect())
                .collect();
            // Money and other numbers right-aligned: a column of numbers only.
            let numeric: Vec<bool> = flat
                .iter()
                .map(|k| {
                    rows.iter()
                        .all(|r| matches!(r[k.as_str()], Value::Number(_) | Value::Null))
                })
                .collect();
            let widths: Vec<usize> = keys
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    cells
                        .iter()
                        .map(|c| columns(&c[i]))
                        .max()
                        .unwrap_or(0)
                        .max(columns(k))
                })
                .collect();
            let line = |vals: Vec<&str>| {
                let mut l = pad.clone();
                for (i, v) in vals.iter().enumerate() {
                    // Padded by terminal columns: `{:<w$}` counts characters, and a name with
                    // combining marks would push every cell after it out of line.
                    let fill = " ".repeat(widths[i].saturating_sub(columns(v)));
                    if numeric[i] {
                        let _ = write!(l, "{fill}{v}  ");
                    } else {
                        let _ = write!(l, "{v}{fill}  ");
                    }
                }
                l.trim_end().to_owned() + "\n"
            };
            if !keys.is_empty() {
                s.push_str(&line(keys.iter().map(|k| k.as_str()).collect()));
                for c in &cells {
                    s.push_str(&line(c.iter().map(String::as_str).collect()));
                }
            }
            for (n, r) in rows.iter().enumerate() {
                for k in &deep {
                    let v = &r[k.as_str()];
                    if matches!(v, Value::Null) {
                        continue;
                    }
                    // Named by the row's first cell (a currency, a governorate), else its number.
                    let name = cells
                        .get(n)
                        .and_then(|c| c.first())
                        .filter(|c| !c.is_empty())
                        .cloned()
                        .unwrap_or_else(|| format!("#{}", n + 1));
                    let _ = writeln!(s, "\n{pad}{name} {}:", printable(k));
                    s.push_str(&table(v, indent + 2));
                }
            }
        }
        Value::Array(items) => {
            for i in items {
                let _ = writeln!(s, "{pad}{}", scalar(i));
            }
        }
        Value::Object(o) => {
            let w = o.keys().map(String::len).max().unwrap_or(0);
            for (k, v) in o {
                let k = printable(k);
                match v {
                    Value::Array(a) if a.iter().any(Value::is_object) => {
                        let _ = writeln!(s, "{pad}{k}:");
                        s.push_str(&table(v, indent + 2));
                    }
                    Value::Object(_) => {
                        let _ = writeln!(s, "{pad}{k}:");
                        s.push_str(&table(v, indent + 2));
                    }
                    _ => {
                        let _ = writeln!(s, "{pad}{k:<w$}  {}", scalar(v));
                    }
                }
            }
        }
        other => {
            let _ = writeln!(s, "{pad}{}", scalar(other));
        }
    }
    s
}

#[cfg(test)]
mod ids_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_table_lines_up_arabic_names_with_combining_marks_by_terminal_columns() {
        // "Muhammad" with its harakat: 11 characters, 6 of them combining marks.
        let voweled = "\u{645}\u{64f}\u{62d}\u{64e}\u{645}\u{651}\u{64e}\u{62f}\u{652}";
        let text = table(
            &json!([
                {"name": voweled, "where": "Beirut"},
                {"name": "Rami", "where": "Tripoli"},
                {"name": "\u{5f20}\u{4f1f}", "where": "Saida"},
            ]),
            0,
        );
        let lines: Vec<&str> = text.lines().collect();
        // Every row's second column starts at the same terminal column.
        assert!(lines[0].starts_with("name"), "{text}");
        let city_at = |l: &str| {
            let cut = l.rfind("  ").expect("two columns") + 2;
            columns(&l[..cut])
        };
        let at = city_at(lines[1]);
        for l in &lines[1..] {
            assert_eq!(city_at(l), at, "{text}");
        }
    }

    #[test]
    fn a_table_puts_prose_after_the_columns_that_name_each_row() {
        let about = "a".repeat(300);
        let text = table(
            &json!([{"about": about, "column": "reference", "required": false}]),
            0,
        );
        let header = text.lines().next().expect("header");
        assert!(header.starts_with("column"), "{header}");
        assert!(header.trim_end().ends_with("about"), "{header}");
    }

    #[test]
    fn a_hint_names_the_commands_flags_not_the_librarys_api() {
        let hint = whish::core::Error::<whish::transfer::TransferCode>::Validation(
            whish::core::ValidationError::new(
                "callbackUrl",
                whish::core::ValidationKind::NotPublicUrl {
                    reason: "loopback".into(),
                },
            ),
        )
        .hint();
        let said = in_the_commands_words(&hint);
        assert!(said.contains("--allow-local-callbacks"), "{said}");
        for (rust, _) in THE_COMMANDS_WORDS {
            assert!(!said.contains(rust), "{said}");
        }
        assert!(!said.contains("::"), "{said}");
    }

    #[test]
    fn integers_a_double_cannot_hold_are_printed_as_strings_and_the_rest_as_numbers() {
        let v = json!({
            "requestId": 2_229_601_762_207_601_332_u64,
            "negative": -9_007_199_254_740_993_i64,
            "small": 9_007_199_254_740_992_u64,
            "attempts": 3,
            "fee": 1.5,
            "nested": [{"transferId": 9_007_199_254_740_993_u64}],
        });
        assert_eq!(
            ids_exact(&v),
            json!({
                "requestId": "2229601762207601332",
                "negative": "-9007199254740993",
                "small": 9_007_199_254_740_992_u64,
                "attempts": 3,
                "fee": 1.5,
                "nested": [{"transferId": "9007199254740993"}],
            })
        );
    }
}
