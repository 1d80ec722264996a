//! The one pattern for the services' open string sets: an enum with a variant per documented
//! value and an `Other(String)` arm, so a value the service adds later decodes instead of failing.

/// Declare an open string enum: a variant per documented string, plus `Other(String)` for any
/// other value, kept exactly as sent. It gets `as_str`, `parse` (never fails), `Display`,
/// `Serialize` and a borrowed-string `Deserialize`.
///
/// An optional `normalize = path` names a `fn(&str) -> String` (or `Cow<str>`) applied before matching (the
/// currency codes are read case-insensitively).
///
/// ```
/// whish_core::open_enum! {
///     /// A colour.
///     pub Colour {
///         /// Red.
///         Red => "RED",
///         /// Green.
///         Green => "GREEN",
///     }
/// }
/// assert_eq!(Colour::parse("RED"), Colour::Red);
/// assert_eq!(Colour::parse("BLUE"), Colour::Other("BLUE".into()));
/// let c: Colour = serde_json::from_str("\"GREEN\"").unwrap();
/// assert_eq!(c.to_string(), "GREEN");
/// ```
#[macro_export]
#[doc(hidden)]
macro_rules! open_enum {
    (
        $(#[$m:meta])*
        $vis:vis $name:ident $(normalize = $norm:path)? {
            $($(#[$vm:meta])* $variant:ident => $text:literal),+ $(,)?
        }
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        $vis enum $name {
            $($(#[$vm])* $variant,)+
            /// A value the specification does not list, kept exactly as sent.
            Other(String),
        }

        impl $name {
            /// Every documented value, in the order of the specification.
            pub const DOCUMENTED: &'static [$name] = &[$($name::$variant),+];

            /// The string as the service writes it.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $text,)+
                    $name::Other(s) => s,
                }
            }

            /// Read a value; never fails (a value not documented is `Other`).
            pub fn parse(s: &str) -> $name {
                $(let normalized = $norm(s); let s: &str = &normalized;)?
                match s {
                    $($text => $name::$variant,)+
                    other => $name::Other(other.to_owned()),
                }
            }

            /// True for a value the specification does not list.
            pub fn is_other(&self) -> bool {
                matches!(self, $name::Other(_))
            }
        }

        $crate::string_enum_impls!($name);
    };
}

/// `Display`, `Serialize` and a borrowed-string `Deserialize` for a type with
/// `fn as_str(&self) -> &str` and `fn parse(&str) -> Self`: the part of [`open_enum!`] that
/// types with their own parsing rule (such as a shop type whose branch value carries a brand)
/// share.
#[macro_export]
#[doc(hidden)]
macro_rules! string_enum_impls {
    ($name:ident) => {
        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = ::std::convert::Infallible;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Ok($name::parse(s))
            }
        }

        impl $crate::runtime::serde::Serialize for $name {
            fn serialize<S: $crate::runtime::serde::Serializer>(
                &self,
                s: S,
            ) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> $crate::runtime::serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::runtime::serde::Deserializer<'de>>(
                d: D,
            ) -> Result<Self, D::Error> {
                $crate::runtime::with_str(d, "a string", |s| {
                    Ok::<_, ::std::convert::Infallible>($name::parse(s))
                })
            }
        }
    };
}
