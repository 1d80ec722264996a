//! The JSON path of a decode error, read from the error's position in the text.
//!
//! `serde_json` says where in the text a value failed (line and column); the path to that
//! point (`list[3].amount`) is found by walking the text up to it. Decoding itself stays
//! `serde_json` alone: this runs only after a decode has failed.

/// One open container on the way to the failing value.
enum Frame<'a> {
    /// An object, with the key whose value is being read (none before the first key).
    Object { key: Option<&'a [u8]> },
    /// An array, with the index of the element being read.
    Array { index: usize },
}

/// The path of the value that `error` names in `text`: keys joined by `.`, array indexes as
/// `[n]`, `.` for the whole text (also when the error has no position).
pub(crate) fn of_error(text: &[u8], error: &serde_json::Error) -> String {
    if error.line() == 0 {
        return ".".to_owned();
    }
    at(text, offset(text, error.line(), error.column()))
}

/// The byte just past the error's position: `line` is 1-based, `column` counts the bytes of
/// that line read so far.
fn offset(text: &[u8], line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line {
        match text[start..].iter().position(|&b| b == b'\n') {
            Some(n) => start += n + 1,
            None => return text.len(),
        }
    }
    (start + column).min(text.len())
}

/// The path of the innermost value open at byte `end` of `text`.
fn at(text: &[u8], end: usize) -> String {
    let mut stack: Vec<Frame<'_>> = Vec::new();
    let mut i = 0;
    while i < end {
        match text[i] {
            b'{' => stack.push(Frame::Object { key: None }),
            b'[' => stack.push(Frame::Array { index: 0 }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some(Frame::Array { index }) = stack.last_mut() {
                    *index += 1;
                }
            }
            b'"' => {
                let start = i + 1;
                i = start;
                while i < text.len() && text[i] != b'"' {
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
                let string = &text[start..i.min(text.len())];
                // A string followed by `:` is a key.
                let mut j = i + 1;
                while j < text.len() && text[j].is_ascii_whitespace() {
                    j += 1;
                }
                if j < text.len()
                    && text[j] == b':'
                    && let Some(Frame::Object { key }) = stack.last_mut()
                {
                    *key = Some(string);
                }
            }
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object { key: Some(key) } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&String::from_utf8_lossy(key));
            }
            Frame::Object { key: None } => {}
            Frame::Array { index } => {
                path.push('[');
                path.push_str(&index.to_string());
                path.push(']');
            }
        }
    }
    if path.is_empty() {
        path.push('.');
    }
    path
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Item {
        amount: u32,
        name: String,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Page {
        total: u32,
        list: Vec<Item>,
        tags: Option<Vec<u8>>,
    }

    /// Our path and serde_path_to_error's, for one text that does not decode as a `Page`.
    fn both(text: &str) -> (String, String) {
        let error = serde_json::from_str::<Page>(text).expect_err("does not decode");
        let ours = super::of_error(text.as_bytes(), &error);
        let mut de = serde_json::Deserializer::from_str(text);
        let theirs = serde_path_to_error::deserialize::<_, Page>(&mut de)
            .expect_err("does not decode")
            .path()
            .to_string();
        (ours, theirs)
    }

    #[test]
    fn the_path_of_a_failing_value_is_the_one_serde_path_to_error_names() {
        for text in [
            r#"{"total":"x","list":[]}"#,
            r#"{"total":1,"list":[{"amount":1,"name":"a"},{"amount":"2","name":"b"}]}"#,
            r#"{"total":1,"list":[{"amount":1,"name":"a"},{"name":"b"}]}"#,
            "{\n  \"total\": 1,\n  \"list\": [\n    {\"amount\": 1, \"name\": 7}\n  ]\n}",
            r#"{"total":1,"list":[],"tags":[1,2,300]}"#,
            r#"{"total":1,"list":{"amount":1}}"#,
            r#"{"total":1}"#,
            r#"{"to\"tal":1,"total":-1,"list":[]}"#,
            r#"{"total":1,"list":[{"amount":1,"name":"a,b]}"},{"amount":1.5,"name":"c"}]}"#,
            "[1,2]",
        ] {
            let (ours, theirs) = both(text);
            assert_eq!(ours, theirs, "{text}");
        }
    }

    #[test]
    fn a_text_cut_short_names_the_value_open_where_it_stops() {
        // serde_path_to_error says `?` here.
        let text = r#"{"total":1,"list":[{"amount":1,"name":"a"}]"#;
        let error = serde_json::from_str::<Page>(text).expect_err("cut short");
        assert_eq!(super::of_error(text.as_bytes(), &error), "list");
    }

    #[test]
    fn an_error_without_a_position_is_at_the_root() {
        let error = <serde_json::Error as serde::de::Error>::custom("no position");
        assert_eq!(super::of_error(b"{\"a\":1}", &error), ".");
    }
}
