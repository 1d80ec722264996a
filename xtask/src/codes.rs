//! The error-code data files and what is generated from them.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;

/// One service's data file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeFile {
    pub service: String,
    #[serde(rename = "enum")]
    pub enum_name: String,
    pub crate_path: String,
    pub doc: String,
    /// How to settle an outcome that is unknown (a lost reply, an unreadable one), in this
    /// service's terms: which endpoint confirms, or which resend recovers.
    pub confirm: String,
    /// What to do with Pending (`code` 500) in this service.
    pub pending: String,
    #[serde(rename = "code")]
    pub codes: Vec<CodeRow>,
    /// HTTP statuses the service documents answering without the envelope.
    #[serde(default)]
    pub http: Vec<HttpRow>,
}

/// A documented HTTP status answered without the envelope (the collect 403).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpRow {
    pub status: u16,
    /// The operations (`collect.refund`) the row applies to; every one when empty.
    #[serde(default)]
    pub endpoints: Vec<String>,
    pub meaning: String,
    pub handling: String,
}

/// One documented code.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeRow {
    pub code: String,
    pub variant: Option<String>,
    pub meaning: String,
    pub handling: String,
    pub endpoints: Vec<String>,
    #[serde(rename = "final")]
    pub is_final: bool,
    #[serde(default)]
    pub challenge: bool,
    /// Answered to a resend of the same key, the code says an earlier attempt was applied
    /// (`transfer.already.done`, `transfer.cannot_be_canceled`); on a request never sent
    /// before it is a refusal.
    #[serde(default)]
    pub confirms_earlier: bool,
    /// The service checks it before it looks at the request (authentication, the account, the
    /// headers): answered to a resend, it says nothing of an earlier attempt.
    #[serde(default)]
    pub checked_first: bool,
    /// A refusal that created nothing and asks for the same request again under a **new** key
    /// (the account's balance or a daily limit): a payout batch sends its row again under the
    /// row's next key, and the journal's prune keeps the entry (a row's attempts are read in
    /// order from the first).
    #[serde(default)]
    pub retry_under_new_key: bool,
    /// A refusal about the account, not the request: every later request of a batch would meet
    /// it too, so a batch stops sending.
    #[serde(default)]
    pub about_the_account: bool,
    /// Other spellings of the same code (the brand segment: the spec's `svc`, the live `whish`).
    #[serde(default)]
    pub aliases: Vec<String>,
}

impl CodeRow {
    fn variant(&self) -> Result<String, String> {
        if let Some(v) = &self.variant {
            return Ok(v.clone());
        }
        let mut out = String::new();
        for part in self.code.split(|c: char| !c.is_ascii_alphanumeric()) {
            let mut chars = part.chars();
            if let Some(first) = chars.next() {
                out.push(first.to_ascii_uppercase());
                out.extend(chars);
            }
        }
        if out.is_empty() || !out.starts_with(|c: char| c.is_ascii_uppercase()) {
            return Err(format!(
                "code `{}` needs an explicit `variant` name",
                self.code
            ));
        }
        Ok(out)
    }
}

/// Read every `*.toml` in `dir`, sorted by file name.
pub fn load_all(dir: &Path) -> Result<Vec<CodeFile>, String> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    let mut files = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        let file: CodeFile = toml::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?;
        check(&file).map_err(|e| format!("{}: {e}", p.display()))?;
        files.push(file);
    }
    Ok(files)
}

fn check(file: &CodeFile) -> Result<(), String> {
    let mut codes = BTreeSet::new();
    let mut variants = BTreeSet::new();
    for row in &file.codes {
        if row.code == "500" {
            return Err("500 is Pending, not a failure code; leave it out".into());
        }
        if !codes.insert(row.code.as_str()) {
            return Err(format!("code `{}` is listed twice", row.code));
        }
        for a in &row.aliases {
            if !codes.insert(a.as_str()) {
                return Err(format!("alias `{a}` is listed twice"));
            }
        }
        let v = row.variant()?;
        if v == "Unknown" || !variants.insert(v.clone()) {
            return Err(format!("variant `{v}` (code `{}`) collides", row.code));
        }
    }
    Ok(())
}

fn lit(s: &str) -> String {
    format!("{s:?}")
}

fn doc_text(s: &str) -> String {
    s.replace('[', "\\[").replace(']', "\\]")
}

/// The Rust source of one service's code enum (before rustfmt).
pub fn render_rust(file: &CodeFile) -> Result<String, String> {
    let mut s = String::new();
    render_header(&mut s, file);
    render_enum(&mut s, file)?;
    render_inherent_impl(&mut s, file)?;
    render_from_str(&mut s, file)?;
    render_string_traits(&mut s, &file.enum_name);
    render_error_code_impl(&mut s, file);
    Ok(s)
}

/// The generated-file banner, the module doc and the imports.
fn render_header(s: &mut String, file: &CodeFile) {
    let _ = writeln!(
        s,
        "// @generated by `cargo xtask codegen` from codes/{}.toml. Do not edit by hand:\n\
         // change the data file and run `cargo xtask codegen`.\n",
        file.service
    );
    let _ = writeln!(
        s,
        "//! The documented error codes of the {} service.\n",
        file.service
    );
    let _ = writeln!(s, "use std::fmt;\nuse std::str::FromStr;\n");
}

/// The enum: one documented variant per code, then `Unknown(String)`.
fn render_enum(s: &mut String, file: &CodeFile) -> Result<(), String> {
    let e = &file.enum_name;
    let _ = writeln!(s, "/// {}", doc_text(&file.doc));
    let _ = writeln!(
        s,
        "///\n/// Unknown strings decode into [`{e}::Unknown`]; the literal strings are kept exactly as documented."
    );
    let _ = writeln!(
        s,
        "#[derive(Debug, Clone, PartialEq, Eq, Hash)]\n#[non_exhaustive]\npub enum {e} {{"
    );
    for row in &file.codes {
        let _ = writeln!(s, "    /// `{}`: {}.", row.code, doc_text(&row.meaning));
        if !row.aliases.is_empty() {
            let names: Vec<String> = row.aliases.iter().map(|a| format!("`{a}`")).collect();
            let _ = writeln!(
                s,
                "    ///\n    /// Also decoded from {} (the live brand).",
                names.join(", ")
            );
        }
        let _ = writeln!(s, "    ///");
        let _ = writeln!(
            s,
            "    /// Handling: {}. Endpoints: {}. {}",
            doc_text(&row.handling),
            row.endpoints.join(", "),
            if row.challenge {
                "A challenge: an expected next step, not a failure."
            } else if row.is_final {
                "Final."
            } else {
                "Not final: the same request may succeed later."
            }
        );
        let _ = writeln!(s, "    {},", row.variant()?);
    }
    let _ = writeln!(
        s,
        "    /// A code the specification does not list, kept exactly as sent.\n    Unknown(String),\n}}\n"
    );
    Ok(())
}

/// The `impl` of the enum itself: `DOCUMENTED`, the per-code lookups, and the code lists a
/// batch reads.
fn render_inherent_impl(s: &mut String, file: &CodeFile) -> Result<(), String> {
    let e = &file.enum_name;
    let _ = writeln!(s, "impl {e} {{");
    let _ = writeln!(
        s,
        "    /// Every documented code, in the order of the specification."
    );
    let _ = write!(s, "    pub const DOCUMENTED: &'static [{e}] = &[");
    for row in &file.codes {
        let _ = write!(s, "{e}::{}, ", row.variant()?);
    }
    let _ = writeln!(s, "];\n");
    render_lookups(s, file)?;
    render_code_lists(s, file);
    Ok(())
}

/// The methods that answer per code with a `match` over every variant, and `is_unknown`.
fn render_lookups(s: &mut String, file: &CodeFile) -> Result<(), String> {
    let e = &file.enum_name;
    render_match_fn(
        s,
        file,
        "    /// The literal string, exactly as the service writes it.\n    pub fn as_str(&self) -> &str {",
        &|r| lit(&r.code),
        "Unknown(s) => s",
    )?;
    render_match_fn(
        s,
        file,
        "    /// What the code means, from the specification.\n    pub fn meaning(&self) -> &'static str {",
        &|r| lit(&r.meaning),
        "Unknown(_) => \"not documented\"",
    )?;
    render_match_fn(
        s,
        file,
        "    /// What the caller should do.\n    pub fn handling(&self) -> &'static str {",
        &|r| lit(&r.handling),
        "Unknown(_) => \"an undocumented code: treat it as a failure and show the dialog\"",
    )?;
    render_match_fn(
        s,
        file,
        "    /// The endpoints that document this code.\n    pub fn endpoints(&self) -> &'static [&'static str] {",
        &|r| {
            let items: Vec<String> = r.endpoints.iter().map(|x| lit(x)).collect();
            format!("&[{}]", items.join(", "))
        },
        "Unknown(_) => &[]",
    )?;
    render_match_fn(
        s,
        file,
        "    /// True when resending the same request will not change the answer. Unknown codes are final.\n    pub fn is_final(&self) -> bool {",
        &|r| r.is_final.to_string(),
        "Unknown(_) => true",
    )?;
    let _ = writeln!(
        s,
        "    /// True when the code is not one of the documented ones.\n    pub fn is_unknown(&self) -> bool {{\n        matches!(self, {e}::Unknown(_))\n    }}\n"
    );
    render_match_fn(
        s,
        file,
        "    /// True when the code is a documented challenge (an expected step), not a failure.\n    pub fn is_challenge(&self) -> bool {",
        &|r| r.challenge.to_string(),
        "Unknown(_) => false",
    )?;
    render_match_fn(
        s,
        file,
        "    /// True when, answered to a resend of the same key, the code says an earlier attempt was applied;\n    /// on a request never sent before it is a refusal (see `whish_core::verdict`).\n    pub fn confirms_earlier_delivery(&self) -> bool {",
        &|r| r.confirms_earlier.to_string(),
        "Unknown(_) => false",
    )?;
    render_match_fn(
        s,
        file,
        "    /// True when the service checks this before it looks at the request (authentication, the account,\n    /// the headers): answered to a resend, it says nothing of an earlier attempt.\n    pub fn checked_first(&self) -> bool {",
        &|r| r.checked_first.to_string(),
        "Unknown(_) => false",
    )
}

/// One method whose body is a `match self` with an arm per code: `head` is its doc and
/// signature up to the `{`, `value` each code's answer, `unknown_arm` the `Unknown` arm.
fn render_match_fn(
    s: &mut String,
    file: &CodeFile,
    head: &str,
    value: &dyn Fn(&CodeRow) -> String,
    unknown_arm: &str,
) -> Result<(), String> {
    let e = &file.enum_name;
    let _ = writeln!(s, "{head}\n        match self {{");
    for row in &file.codes {
        let _ = writeln!(s, "            {e}::{} => {},", row.variant()?, value(row));
    }
    let _ = writeln!(s, "            {e}::{unknown_arm},");
    let _ = writeln!(s, "        }}\n    }}\n");
    Ok(())
}

/// `RETRY_UNDER_NEW_KEY` and `ABOUT_THE_ACCOUNT` with their methods; this closes the `impl`.
fn render_code_lists(s: &mut String, file: &CodeFile) {
    let _ = writeln!(
        s,
        "    /// The refusals that created nothing and ask for the same request again under a new key (the\n    /// account's balance or a daily limit): a batch sends the row again under its next key, and\n    /// the journal's prune keeps them.\n    pub const RETRY_UNDER_NEW_KEY: &'static [&'static str] = {};\n",
        code_list(file, &|r| r.retry_under_new_key)
    );
    let _ = writeln!(
        s,
        "    /// The refusals about the account, not the request: a batch stops sending at the first.\n    pub const ABOUT_THE_ACCOUNT: &'static [&'static str] = {};\n",
        code_list(file, &|r| r.about_the_account)
    );
    let _ = writeln!(
        s,
        "    /// True when the code asks for the same request again under a new key (see\n    /// [`RETRY_UNDER_NEW_KEY`](Self::RETRY_UNDER_NEW_KEY)).\n    pub fn retry_under_new_key(&self) -> bool {{\n        Self::RETRY_UNDER_NEW_KEY.contains(&self.as_str())\n    }}\n"
    );
    let _ = writeln!(
        s,
        "    /// True when the code is about the account, not the request (see\n    /// [`ABOUT_THE_ACCOUNT`](Self::ABOUT_THE_ACCOUNT)).\n    pub fn about_the_account(&self) -> bool {{\n        Self::ABOUT_THE_ACCOUNT.contains(&self.as_str())\n    }}\n}}\n"
    );
}

/// The literal strings of the codes `pick` selects, as a slice expression (`&[]` when none).
fn code_list(file: &CodeFile, pick: &dyn Fn(&CodeRow) -> bool) -> String {
    let codes: Vec<String> = file
        .codes
        .iter()
        .filter(|r| pick(r))
        .map(|r| format!("        {},", lit(&r.code)))
        .collect();
    if codes.is_empty() {
        "&[]".to_owned()
    } else {
        format!("&[\n{}\n    ]", codes.join("\n"))
    }
}

/// `FromStr`: each code and its aliases to its variant, anything else to `Unknown`.
fn render_from_str(s: &mut String, file: &CodeFile) -> Result<(), String> {
    let e = &file.enum_name;
    let _ = writeln!(
        s,
        "impl FromStr for {e} {{\n    type Err = std::convert::Infallible;\n\n    fn from_str(s: &str) -> Result<Self, Self::Err> {{\n        Ok(match s {{"
    );
    for row in &file.codes {
        let mut pattern = lit(&row.code);
        for a in &row.aliases {
            pattern.push_str(" | ");
            pattern.push_str(&lit(a));
        }
        let _ = writeln!(s, "            {pattern} => {e}::{},", row.variant()?);
    }
    let _ = writeln!(
        s,
        "            other => {e}::Unknown(other.to_owned()),\n        }})\n    }}\n}}\n"
    );
    Ok(())
}

/// `Display`, `Serialize` and `Deserialize`, all through the literal string.
fn render_string_traits(s: &mut String, e: &str) {
    let _ = writeln!(
        s,
        "impl fmt::Display for {e} {{\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {{\n        f.write_str(self.as_str())\n    }}\n}}\n"
    );
    let _ = writeln!(
        s,
        "impl serde::Serialize for {e} {{\n    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {{\n        s.serialize_str(self.as_str())\n    }}\n}}\n"
    );
    let _ = writeln!(
        s,
        "impl<'de> serde::Deserialize<'de> for {e} {{\n    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {{\n        whish_core::runtime::with_str(d, \"a string\", |s| Ok::<_, std::convert::Infallible>(<Self as whish_core::ErrorCode>::parse(s)))\n    }}\n}}\n"
    );
}

/// `whish_core::ErrorCode`: the service's hints, and the methods delegated to the enum's own.
fn render_error_code_impl(s: &mut String, file: &CodeFile) {
    let e = &file.enum_name;
    let _ = writeln!(
        s,
        "impl whish_core::ErrorCode for {e} {{\n    const SERVICE: &'static str = {};\n\n    fn http_status_hint(status: u16, endpoint: &str) -> Option<&'static str> {{\n{}\n    }}\n\n    fn confirm_hint() -> &'static str {{\n        {}\n    }}\n\n    fn pending_hint() -> &'static str {{\n        {}\n    }}\n\n    fn as_str(&self) -> &str {{\n        {e}::as_str(self)\n    }}\n\n    fn is_final(&self) -> bool {{\n        {e}::is_final(self)\n    }}\n\n    fn handling(&self) -> &'static str {{\n        {e}::handling(self)\n    }}\n\n    fn is_challenge(&self) -> bool {{\n        {e}::is_challenge(self)\n    }}\n\n    fn confirms_earlier_delivery(&self) -> bool {{\n        {e}::confirms_earlier_delivery(self)\n    }}\n\n    fn checked_first(&self) -> bool {{\n        {e}::checked_first(self)\n    }}\n\n    fn is_unknown(&self) -> bool {{\n        {e}::is_unknown(self)\n    }}\n}}",
        lit(&file.service),
        http_status_hint_body(file),
        lit(&file.confirm),
        lit(&file.pending),
    );
}

/// The body of `http_status_hint`: a `match` on the statuses the service answers without the
/// envelope, each guarded by its operations when it names some.
fn http_status_hint_body(file: &CodeFile) -> String {
    if file.http.is_empty() {
        return "        let _ = (status, endpoint);\n        None".to_owned();
    }
    let arms: String = file
        .http
        .iter()
        .map(|h| {
            let guard = if h.endpoints.is_empty() {
                String::new()
            } else {
                let list: Vec<String> = h.endpoints.iter().map(|e| lit(e)).collect();
                format!(" if [{}].contains(&endpoint)", list.join(", "))
            };
            format!(
                "            {}{guard} => Some({}),\n",
                h.status,
                lit(&format!("{}: {}", h.meaning, h.handling))
            )
        })
        .collect();
    format!("        match status {{\n{arms}            _ => None,\n        }}")
}

/// docs/errors.md: the error-code reference of every service.
pub fn render_markdown(files: &[CodeFile]) -> String {
    let mut s = String::new();
    s.push_str(
        "<!-- @generated by `cargo xtask codegen` from codes/*.toml. Do not edit by hand. -->\n\n",
    );
    s.push_str("# Error-code reference\n\n");
    s.push_str("Every code is returned with `status: false`. The value `500` is never a failure: it means\n");
    s.push_str("**Pending** (outcome unknown) and is reported as `Error::Pending`, not as a code. Match the\n");
    s.push_str("code string exactly and never branch on the dialog text. A code not listed here decodes into the\n");
    s.push_str("enum's `Unknown(String)` arm and is treated as a final failure.\n\n");
    s.push_str("To add or change a code: edit the service's file in `codes/`, run `cargo xtask codegen`, and\n");
    s.push_str("review the diff of the generated enum and of this page.\n");
    for f in files {
        let _ = writeln!(s, "\n## {} (`{}`)\n", f.service, f.enum_name);
        let _ = writeln!(s, "{}\n", f.doc);
        let _ = writeln!(
            s,
            "- **Pending**: {}\n- **Outcome unknown** (a lost or unreadable reply): {}\n",
            f.pending, f.confirm
        );
        s.push_str("| Code | Variant | Meaning | Handling | Endpoints | Final |\n|---|---|---|---|---|---|\n");
        for r in &f.codes {
            let mut fin = if r.challenge {
                "challenge"
            } else if r.is_final {
                "yes"
            } else {
                "no"
            }
            .to_owned();
            if r.retry_under_new_key {
                fin.push_str("; send again under a new key");
            }
            if r.about_the_account {
                fin.push_str("; a batch stops");
            }
            let shown = std::iter::once(&r.code)
                .chain(&r.aliases)
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(" or ");
            let _ = writeln!(
                s,
                "| {} | `{}` | {} | {} | {} | {} |",
                shown,
                r.variant().unwrap_or_default(),
                r.meaning.replace('|', "\\|"),
                r.handling.replace('|', "\\|"),
                r.endpoints.join(", "),
                fin
            );
        }
        if !f.http.is_empty() {
            s.push_str("\nAnswered without the envelope:\n\n| HTTP status | Operations | Meaning | Handling |\n|---|---|---|---|\n");
            for h in &f.http {
                let ops = if h.endpoints.is_empty() {
                    "all".to_owned()
                } else {
                    h.endpoints
                        .iter()
                        .map(|e| format!("`{e}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let _ = writeln!(
                    s,
                    "| {} | {ops} | {} | {} |",
                    h.status, h.meaning, h.handling
                );
            }
        }
    }
    s
}
