//! The `User-Agent` the collect and top-up services require:
//! `AppName/version (website; contact-email)`, with the caller's own details.

use std::fmt;
use std::str::FromStr;

use crate::validation::ValidationError;

/// The four parts of a [`UserAgent`], by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserAgentParts<'a> {
    /// The application name (`ShopName`).
    pub app_name: &'a str,
    /// The application version (`1.4.2`).
    pub version: &'a str,
    /// The website (`https://shop.example.com`).
    pub website: &'a str,
    /// The contact e-mail (`dev@shop.example.com`).
    pub contact_email: &'a str,
}

/// A parsed `AppName/version (website; contact-email)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UserAgent {
    app_name: String,
    version: String,
    website: String,
    contact_email: String,
}

impl UserAgent {
    /// Build one from its parts, named so that none can be swapped, checked the same way as
    /// parsing.
    ///
    /// ```
    /// use whish_core::{UserAgent, UserAgentParts};
    /// let ua = UserAgent::new(UserAgentParts {
    ///     app_name: "ShopName",
    ///     version: "1.4.2",
    ///     website: "https://shop.example.com",
    ///     contact_email: "dev@shop.example.com",
    /// })?;
    /// assert_eq!(ua.to_string(), "ShopName/1.4.2 (https://shop.example.com; dev@shop.example.com)");
    /// # Ok::<(), whish_core::ValidationError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A [`ValidationError`] when a part is empty, holds a character the header cannot carry, or
    /// the e-mail has no `@`.
    pub fn new(parts: UserAgentParts<'_>) -> Result<UserAgent, ValidationError> {
        let UserAgentParts {
            app_name,
            version,
            website,
            contact_email,
        } = parts;
        format!("{app_name}/{version} ({website}; {contact_email})").parse()
    }

    /// The application name.
    pub fn app_name(&self) -> &str {
        &self.app_name
    }
    /// The application version.
    pub fn version(&self) -> &str {
        &self.version
    }
    /// The website.
    pub fn website(&self) -> &str {
        &self.website
    }
    /// The contact e-mail.
    pub fn contact_email(&self) -> &str {
        &self.contact_email
    }
}

fn bad(reason: &str) -> ValidationError {
    ValidationError::invalid(
        "User-Agent",
        format!("{reason}; expected `AppName/version (website; contact-email)`"),
    )
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_graphic() && !matches!(c, '/' | '(' | ')' | ';'))
}

impl FromStr for UserAgent {
    type Err = ValidationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (product, rest) = s
            .split_once(' ')
            .ok_or_else(|| bad("missing the `(website; contact-email)` part"))?;
        let (app_name, version) = product
            .split_once('/')
            .ok_or_else(|| bad("missing `/version` after the application name"))?;
        if !is_token(app_name) {
            return Err(bad(
                "the application name is empty or has spaces or separators",
            ));
        }
        if !is_token(version) {
            return Err(bad("the version is empty or has spaces or separators"));
        }
        let inner = rest
            .trim()
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(|| bad("the details must be in parentheses"))?;
        let (website, email) = inner
            .split_once(';')
            .ok_or_else(|| bad("website and contact e-mail must be separated by `;`"))?;
        let (website, email) = (website.trim(), email.trim());
        if website.is_empty() || website.contains(char::is_whitespace) || website.contains(';') {
            return Err(bad("the website is empty or has spaces"));
        }
        let valid_email = email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }) && !email.contains(char::is_whitespace)
            && !email.contains([';', '(', ')']);
        if !valid_email {
            return Err(bad("the contact e-mail is not an address"));
        }
        Ok(UserAgent {
            app_name: app_name.to_owned(),
            version: version.to_owned(),
            website: website.to_owned(),
            contact_email: email.to_owned(),
        })
    }
}

impl fmt::Display for UserAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} ({}; {})",
            self.app_name, self.version, self.website, self.contact_email
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_shows_the_documented_form() {
        let ua: UserAgent = "MyShop/2.1.0 (https://shop.example.com; dev@shop.example.com)"
            .parse()
            .expect("valid");
        assert_eq!(ua.app_name(), "MyShop");
        assert_eq!(ua.version(), "2.1.0");
        assert_eq!(ua.website(), "https://shop.example.com");
        assert_eq!(ua.contact_email(), "dev@shop.example.com");
        assert_eq!(
            ua.to_string(),
            "MyShop/2.1.0 (https://shop.example.com; dev@shop.example.com)"
        );
        let spaced: UserAgent = "  A/1 ( shop.example.com ;  a@b.co )  "
            .parse()
            .expect("ok");
        assert_eq!(spaced.to_string(), "A/1 (shop.example.com; a@b.co)");
        assert_eq!(
            UserAgent::new(UserAgentParts {
                app_name: "A",
                version: "1",
                website: "w.example",
                contact_email: "a@b.co"
            })
            .expect("ok"),
            UserAgent::new(UserAgentParts {
                app_name: "A",
                version: "1",
                website: "w.example",
                contact_email: "a@b.co"
            })
            .expect("ok")
        );
    }

    #[test]
    fn refuses_other_forms_with_a_clear_error() {
        for bad in [
            "",
            "MyShop",
            "MyShop/1.0",
            "MyShop 1.0 (w; a@b.co)",
            "/1.0 (w; a@b.co)",
            "MyShop/ (w; a@b.co)",
            "MyShop/1.0 w; a@b.co",
            "MyShop/1.0 (w a@b.co)",
            "MyShop/1.0 (; a@b.co)",
            "MyShop/1.0 (w; not-an-email)",
            "MyShop/1.0 (w; a@b)",
            "My Shop/1.0 (w; a@b.co)",
        ] {
            let e = bad.parse::<UserAgent>().expect_err(bad);
            assert_eq!(e.field, "User-Agent");
            assert!(
                e.to_string()
                    .contains("AppName/version (website; contact-email)"),
                "{e}"
            );
        }
    }
}
