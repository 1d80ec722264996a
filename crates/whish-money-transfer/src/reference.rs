//! The reference strings of `reason` and `sourceOfFunds`, exactly as the service requires them.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use whish_core::ValidationError;

macro_rules! exact_strings {
    ($(#[$m:meta])* $name:ident, $field:literal { $($(#[$vm:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vm])* $variant,)+
        }

        impl $name {
            /// Every value, in the specification's order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The exact string the service requires.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = ValidationError;
            /// Only the exact documented strings are accepted.
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(ValidationError::invalid(
                        $field,
                        format!("must be exactly one of: {}", [$($text),+].join("; ")),
                    )),
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

exact_strings! {
    /// `reason`: why the money is sent.
    Reason, "reason" {
        /// "Donations & Gifts".
        DonationsAndGifts => "Donations & Gifts",
        /// "Education".
        Education => "Education",
        /// "Family Support".
        FamilySupport => "Family Support",
        /// "Medical Treatment".
        MedicalTreatment => "Medical Treatment",
        /// "Purchase of Goods".
        PurchaseOfGoods => "Purchase of Goods",
        /// "Travel Expenses".
        TravelExpenses => "Travel Expenses",
        /// "Insurance Plan / Claim".
        InsurancePlanOrClaim => "Insurance Plan / Claim",
        /// "Retirement / Pension".
        RetirementOrPension => "Retirement / Pension",
        /// "Other".
        Other => "Other",
    }
}

exact_strings! {
    /// `sourceOfFunds`: where the money comes from.
    SourceOfFunds, "sourceOfFunds" {
        /// "Salary".
        Salary => "Salary",
        /// "Income from Own Business".
        IncomeFromOwnBusiness => "Income from Own Business",
        /// "Income from Investments".
        IncomeFromInvestments => "Income from Investments",
        /// "Rent".
        Rent => "Rent",
        /// "Inheritance".
        Inheritance => "Inheritance",
        /// "Savings".
        Savings => "Savings",
        /// "Sale of Property or Goods".
        SaleOfPropertyOrGoods => "Sale of Property or Goods",
        /// "Loan".
        Loan => "Loan",
        /// "Lottery / Gambling".
        LotteryOrGambling => "Lottery / Gambling",
        /// "Other".
        Other => "Other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_strings_round_trip() {
        assert_eq!(Reason::ALL.len(), 9);
        assert_eq!(SourceOfFunds::ALL.len(), 10);
        for r in Reason::ALL {
            assert_eq!(r.as_str().parse::<Reason>().expect("ok"), *r);
        }
        for s in SourceOfFunds::ALL {
            assert_eq!(s.as_str().parse::<SourceOfFunds>().expect("ok"), *s);
        }
        assert_eq!(
            serde_json::to_string(&Reason::DonationsAndGifts).expect("json"),
            r#""Donations & Gifts""#
        );
        assert!(
            "FAMILY".parse::<Reason>().is_err(),
            "the old coded tokens are refused"
        );
        assert!("family support".parse::<Reason>().is_err());
        let e = "Gift".parse::<SourceOfFunds>().expect_err("not listed");
        assert_eq!(e.field, "sourceOfFunds");
    }
}
