//! Reading a batch file as a stream of rows: CSV with a header, or JSON lines (one object a
//! line). Nothing is loaded whole: a file of a million rows costs the memory of one row.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::BatchError;
use crate::row::{RawRow, RowError, column};

/// The format of a batch file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// Comma-separated values (RFC 4180) with a header line naming the columns.
    Csv,
    /// One JSON object a line, its keys the column names; blank lines are skipped.
    JsonLines,
}

impl Format {
    /// The format a file's name says: `.csv`, or `.jsonl` / `.ndjson` / `.json`.
    pub fn of_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "csv" => Some(Format::Csv),
            "jsonl" | "ndjson" | "json" => Some(Format::JsonLines),
            _ => None,
        }
    }
}

/// The rows of a file, in order, each read when asked for.
pub(crate) enum Rows {
    Csv {
        reader: Box<csv::Reader<LineEndings<File>>>,
        /// Each header's column, by its place in [`crate::row::COLUMNS`].
        headers: Vec<usize>,
        record: csv::StringRecord,
    },
    Json {
        reader: BufReader<File>,
        line: u64,
        /// The bytes of the line being read.
        bytes: Vec<u8>,
    },
    /// The header was bad: its errors, then nothing.
    Failed(Vec<RowError>),
}

pub(crate) fn open(path: &PathBuf, format: Format) -> Result<Rows, BatchError> {
    let file = File::open(path).map_err(|e| BatchError::io(path, e))?;
    let meta = file.metadata().map_err(|e| BatchError::io(path, e))?;
    if !meta.is_file() {
        return Err(BatchError::Input(format!(
            "{} is not a regular file: a batch is read twice (checked whole, then sent), so it must be a file",
            path.display()
        )));
    }
    match format {
        Format::Csv => {
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(true)
                .flexible(false)
                // Headers trimmed here; a value is trimmed where it is read (`next_row`), once:
                // the reader's own trim rebuilt every record.
                .trim(csv::Trim::Headers)
                .from_reader(LineEndings::new(file));
            let raw = reader
                .headers()
                .map_err(|e| BatchError::Input(format!("{}: {e}", path.display())))?
                .clone();
            let mut errors = Vec::new();
            let mut headers = Vec::new();
            let mut seen = std::collections::BTreeSet::new();
            for h in raw.iter() {
                let h = h.trim_start_matches('\u{feff}');
                match column(h) {
                    Some(c) => {
                        if !seen.insert(c.name) {
                            errors.push(RowError::new(1, h, "the column appears twice"));
                        }
                        headers.push(crate::row::column_index(c.name));
                    }
                    None => errors.push(RowError::new(
                        1,
                        h,
                        "is not a column of a batch file (see the documented header)",
                    )),
                }
            }
            for c in crate::row::COLUMNS.iter().filter(|c| c.required) {
                if !seen.contains(c.name) {
                    errors.push(RowError::new(1, c.name, "the header lacks this column"));
                }
            }
            if !errors.is_empty() {
                return Ok(Rows::Failed(errors));
            }
            Ok(Rows::Csv {
                reader: Box::new(reader),
                headers,
                record: csv::StringRecord::new(),
            })
        }
        Format::JsonLines => Ok(Rows::Json {
            reader: BufReader::new(file),
            line: 0,
            bytes: Vec::new(),
        }),
    }
}

/// A file's line endings as `\n`: `\r\n` (a spreadsheet on Windows) and a lone `\r` become
/// `\n`. The csv reader counts lines by `\n` and stops a record at the `\r` of a `\r\n`, so
/// with Windows line endings every bad row was reported one line up (rust-csv issue 395).
pub(crate) struct LineEndings<R> {
    inner: R,
    /// The last byte given was a `\r` turned into `\n`: a `\n` right after it is dropped.
    after_cr: bool,
}

impl<R> LineEndings<R> {
    fn new(inner: R) -> Self {
        LineEndings {
            inner,
            after_cr: false,
        }
    }
}

impl<R: std::io::Read> std::io::Read for LineEndings<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let n = self.inner.read(buf)?;
            // Nothing to change (a file with `\n` endings): as read, without a pass per byte.
            if n > 0 && !self.after_cr && !buf[..n].contains(&b'\r') {
                return Ok(n);
            }
            let mut kept = 0;
            for i in 0..n {
                let b = buf[i];
                if b == b'\n' && self.after_cr {
                    self.after_cr = false;
                    continue;
                }
                self.after_cr = b == b'\r';
                buf[kept] = if self.after_cr { b'\n' } else { b };
                kept += 1;
            }
            // A read of only the `\n` of a `\r\n` gave nothing: read on, rather than say the
            // file ended.
            if kept > 0 || n == 0 {
                return Ok(kept);
            }
        }
    }
}

/// The longest value of one column: a name or a phone is far shorter; a longer one is a
/// corrupt file, refused before it is held in memory as a row.
const MAX_VALUE: usize = 1024;

impl Rows {
    /// The next row, or a bad line with why; `None` at the end.
    pub(crate) fn next_row(&mut self) -> Option<Result<RawRow, Vec<RowError>>> {
        match self {
            Rows::Failed(errors) => {
                if errors.is_empty() {
                    None
                } else {
                    Some(Err(std::mem::take(errors)))
                }
            }
            Rows::Csv {
                reader,
                headers,
                record,
            } => match reader.read_record(record) {
                Ok(false) => None,
                Ok(true) => {
                    let line = record.position().map_or(0, |p| p.line());
                    let mut row = RawRow::with_capacity(line, record.as_slice().len());
                    for (&column, value) in headers.iter().zip(record.iter()) {
                        let value = value.trim();
                        if value.len() > MAX_VALUE {
                            return Some(Err(vec![RowError::new(
                                line,
                                crate::row::COLUMNS[column].name,
                                format!("is longer than {MAX_VALUE} bytes"),
                            )]));
                        }
                        row.set(column, value);
                    }
                    Some(Ok(row))
                }
                Err(e) => {
                    let line = e.position().map_or(0, |p| p.line());
                    let message = match e.kind() {
                        csv::ErrorKind::UnequalLengths {
                            expected_len, len, ..
                        } => format!("has {len} fields where the header has {expected_len}"),
                        csv::ErrorKind::Utf8 { .. } => "is not UTF-8 text".to_owned(),
                        _ => e.to_string(),
                    };
                    // A broken record may leave the reader unable to go on: an I/O error
                    // ends the file.
                    if matches!(e.kind(), csv::ErrorKind::Io(_)) {
                        *self = Rows::Failed(Vec::new());
                    }
                    Some(Err(vec![RowError::new(line, "", message)]))
                }
            },
            Rows::Json {
                reader,
                line,
                bytes,
            } => loop {
                *line += 1;
                bytes.clear();
                match reader.read_until(b'\n', bytes) {
                    Ok(0) => return None,
                    Ok(_) => {}
                    Err(e) => {
                        let at = *line;
                        *self = Rows::Failed(Vec::new());
                        return Some(Err(vec![RowError::new(at, "", e.to_string())]));
                    }
                }
                // Each line on its own: a line that is not UTF-8 is a bad row, and the lines
                // after it are read (and checked) as any other.
                let Ok(text) = std::str::from_utf8(bytes) else {
                    return Some(Err(vec![RowError::new(*line, "", "is not UTF-8 text")]));
                };
                let mut text = text.trim_end_matches(['\n', '\r']);
                if *line == 1 {
                    text = text.trim_start_matches('\u{feff}');
                }
                if text.trim().is_empty() {
                    continue;
                }
                return Some(json_row(*line, text));
            },
        }
    }
}

/// One JSON object's members in the order written, each value as its exact text: a number is
/// read from its digits as written (a double would round `12345678901234567` to
/// `...568`, and a payout's amount must be the file's), and a key written twice is kept twice
/// so that it can be refused (a JSON object that says `amount` twice is ambiguous).
struct Members<'a>(Vec<(String, &'a serde_json::value::RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Members<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Members<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut m: M,
            ) -> Result<Self::Value, M::Error> {
                let mut members = Vec::new();
                while let Some(entry) =
                    m.next_entry::<String, &'de serde_json::value::RawValue>()?
                {
                    members.push(entry);
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData))
    }
}

/// The columns a JSON number may give: amounts, ids, phones and references are often numbers
/// in a program's output; a name or a reason never is (`"receiver_middle_name": false` was
/// sent as the name "false").
fn takes_number(column: &str) -> bool {
    matches!(
        column,
        "reference" | "amount" | "from_country" | "receiver_phone" | "sender_phone"
    )
}

fn json_row(line: u64, text: &str) -> Result<RawRow, Vec<RowError>> {
    let Members(object) = serde_json::from_str(text).map_err(|e| {
        vec![RowError::new(
            line,
            "",
            format!("is not a JSON object: {e}"),
        )]
    })?;
    let mut row = RawRow::new(line);
    let mut errors = Vec::new();
    let mut seen: Vec<&'static str> = Vec::new();
    for (key, value) in object {
        let Some(c) = column(&key) else {
            errors.push(RowError::new(
                line,
                &key,
                "is not a column of a batch file (see the documented keys)",
            ));
            continue;
        };
        if seen.contains(&c.name) {
            errors.push(RowError::new(
                line,
                c.name,
                "is given twice in this object: give each key once",
            ));
            continue;
        }
        seen.push(c.name);
        let raw = value.get();
        let text = match raw.as_bytes().first() {
            // null: the column is not given.
            Some(b'n') => continue,
            Some(b'"') => match serde_json::from_str::<String>(raw) {
                Ok(s) => s,
                Err(e) => {
                    errors.push(RowError::new(
                        line,
                        c.name,
                        format!("is not a JSON string: {e}"),
                    ));
                    continue;
                }
            },
            // A number, its digits exactly as written, where a number is a value.
            Some(b'-' | b'0'..=b'9') if takes_number(c.name) => raw.to_owned(),
            // true or false, for the one column that is a yes or no.
            Some(b't' | b'f') if c.name == "deduct_fees" => raw.to_owned(),
            _ => {
                errors.push(RowError::new(
                    line,
                    c.name,
                    if c.name == "deduct_fees" {
                        "must be true or false"
                    } else if takes_number(c.name) {
                        "must be a string or a number"
                    } else {
                        "must be a string"
                    },
                ));
                continue;
            }
        };
        if text.len() > MAX_VALUE {
            errors.push(RowError::new(
                line,
                c.name,
                format!("is longer than {MAX_VALUE} bytes"),
            ));
        } else if !text.trim().is_empty() {
            row.set(crate::row::column_index(c.name), &text);
        }
    }
    if errors.is_empty() {
        Ok(row)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every required column, then `more` (header and values, comma-first).
    const REQUIRED: (&str, &str) = (
        "receiver_first_name,receiver_last_name,receiver_phone,amount,currency,reason,source_of_funds",
        "Lina,Haddad,96170123456,1,USD,FAMILY_SUPPORT,SALARY",
    );

    fn csv_rows(test: &str, more: (&str, &[&str])) -> Vec<Result<RawRow, Vec<RowError>>> {
        let path =
            std::env::temp_dir().join(format!("whish-read-{test}-{}.csv", std::process::id()));
        let mut text = format!("{}{}\n", REQUIRED.0, more.0);
        for v in more.1 {
            text.push_str(&format!("{}{v}\n", REQUIRED.1));
        }
        std::fs::write(&path, text).expect("write");
        let mut rows = open(&path, Format::Csv).expect("open");
        let read = std::iter::from_fn(|| rows.next_row()).collect();
        let _ = std::fs::remove_file(&path);
        read
    }

    #[test]
    fn a_csv_value_is_read_without_its_surrounding_spaces_and_a_blank_one_is_absent() {
        let rows = csv_rows(
            "trimmed",
            (", reference , receiver_middle_name ", &[",  EMP-1\t,   "]),
        );
        let row = rows[0].as_ref().expect("a row");
        assert_eq!(row.value("reference"), Some("EMP-1"));
        assert_eq!(row.value("receiver_middle_name"), None, "{row:?}");
    }

    #[test]
    fn a_csv_value_longer_than_the_limit_once_trimmed_is_refused() {
        let long = format!(",{}", "x".repeat(MAX_VALUE + 1));
        let padded = format!(
            ",{}{}{}",
            " ".repeat(8),
            "y".repeat(MAX_VALUE),
            " ".repeat(8)
        );
        let rows = csv_rows("long", (",reference", &[&long, &padded]));
        assert!(rows[0].is_err(), "{:?}", rows[0]);
        let kept = rows[1].as_ref().expect("within the limit once trimmed");
        assert_eq!(kept.value("reference").map(str::len), Some(MAX_VALUE));
    }

    /// Any mix of `\r\n`, lone `\r` and `\n` reads as `\n` endings, wherever the reads of
    /// the file happen to split it (a `\r` ending one read and its `\n` starting the next).
    #[test]
    fn line_endings_read_as_newlines_whatever_the_reads_split() {
        struct Pieces<'a>(&'a [u8], usize);
        impl std::io::Read for Pieces<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.1.min(self.0.len()).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let text = b"a,b\r\nc,d\re,f\ng\r\n\r\nh\n\ni";
        for piece in 1..=text.len() {
            let mut read = String::new();
            std::io::Read::read_to_string(&mut LineEndings::new(Pieces(text, piece)), &mut read)
                .expect("read");
            assert_eq!(read, "a,b\nc,d\ne,f\ng\n\nh\n\ni", "reads of {piece} bytes");
        }
    }
}
