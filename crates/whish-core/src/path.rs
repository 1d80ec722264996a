//! Path segments built from caller input.

use crate::validation::{ValidationError, ValidationKind};

/// Percent-encode `value` as exactly one path segment: every byte outside the RFC 3986
/// unreserved set (`A-Z a-z 0-9 - . _ ~`) is escaped, so `/`, `?`, `#`, `%` and spaces can never
/// reach another path. `.` and `..` are refused: URL parsers treat them (escaped or not) as
/// "this" and "parent" segments.
///
/// ```
/// use whish_core::runtime::path_segment as segment;
/// assert_eq!(segment("a/b c", "provider").unwrap(), "a%2Fb%20c");
/// assert!(segment("..", "provider").is_err());
/// ```
///
/// # Errors
///
/// A `ValidationError` naming the field and the rule the value breaks.
pub fn segment(value: &str, field: &str) -> Result<String, ValidationError> {
    if value.is_empty() {
        return Err(ValidationError::new(field, ValidationKind::Missing));
    }
    if value == "." || value == ".." {
        return Err(ValidationError::invalid(
            field,
            "`.` and `..` cannot be sent as a path segment",
        ));
    }
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_segment_always() {
        assert_eq!(segment("mtn-sy", "p").expect("ok"), "mtn-sy");
        assert_eq!(segment("../account", "p").expect("ok"), "..%2Faccount");
        assert_eq!(segment("a b", "p").expect("ok"), "a%20b");
        assert_eq!(segment("a?b#c%d", "p").expect("ok"), "a%3Fb%23c%25d");
        assert_eq!(segment("é", "p").expect("ok"), "%C3%A9");
        assert_eq!(segment("a..b", "p").expect("ok"), "a..b");
        assert!(segment("", "p").is_err());
        assert!(segment(".", "p").is_err());
        assert!(segment("..", "p").is_err());
    }
}
