//! The sandbox's providers and their fixed option catalogues.

/// One option of a provider.
#[derive(Debug)]
pub(crate) struct Offer {
    pub id: &'static str,
    pub display_name: &'static str,
    /// The amount to pay, in the session's currency (USD); sent back unchanged in pay.
    pub amount: f64,
    /// The price in AED.
    pub price: f64,
}

/// One provider.
#[derive(Debug)]
pub(crate) struct Provider {
    pub code: &'static str,
    pub service: &'static str,
    /// Voucher products issue a serial and a PIN; bundles do not.
    pub vouchers: bool,
    /// The target must start with this (digits only, after an optional `+`); empty: any.
    pub target_prefix: &'static str,
    pub help: Option<&'static str>,
    pub options: &'static [Offer],
}

impl Provider {
    /// The normalized target, or `None` when the provider has no offers for it.
    pub(crate) fn normalize(&self, target: &str) -> Option<String> {
        let t = target.trim();
        if self.target_prefix.is_empty() {
            return (!t.is_empty()).then(|| t.to_owned());
        }
        let digits: String = t
            .strip_prefix('+')
            .unwrap_or(t)
            .chars()
            .filter(|c| !matches!(c, ' ' | '-'))
            .collect();
        (digits.starts_with(self.target_prefix)
            && (11..=13).contains(&digits.len())
            && digits.chars().all(|c| c.is_ascii_digit()))
        .then_some(digits)
    }
}

/// The providers: `etisalat-ae` and `du-ae` (airtime and bundles for UAE numbers starting 971),
/// and `gift-voucher` (PIN vouchers for any target).
pub(crate) const PROVIDERS: [Provider; 3] = [
    Provider {
        code: "etisalat-ae",
        service: "Etisalat UAE Airtime",
        vouchers: false,
        target_prefix: "9715",
        help: None,
        options: &[
            Offer {
                id: "ETI-10",
                display_name: "AED 10 airtime (~2.72 USD)",
                amount: 2.7225,
                price: 10.0,
            },
            Offer {
                id: "ETI-12",
                display_name: "AED 12 airtime (~3.33 USD)",
                amount: 3.3333333333333335,
                price: 12.0,
            },
            Offer {
                id: "ETI-50",
                display_name: "AED 50 airtime (~13.61 USD)",
                amount: 13.6125,
                price: 50.0,
            },
        ],
    },
    Provider {
        code: "du-ae",
        service: "du UAE Data",
        vouchers: false,
        target_prefix: "9715",
        help: Some("Dial *135# to check your data balance."),
        options: &[
            Offer {
                id: "DU-1GB",
                display_name: "1 GB, 7 days (AED 25)",
                amount: 6.81,
                price: 25.0,
            },
            Offer {
                id: "DU-5GB",
                display_name: "5 GB, 30 days (AED 99)",
                amount: 26.96,
                price: 99.0,
            },
        ],
    },
    Provider {
        code: "gift-voucher",
        service: "Gift Voucher",
        vouchers: true,
        target_prefix: "",
        help: Some("Redeem the PIN at checkout."),
        options: &[
            Offer {
                id: "GV-20",
                display_name: "AED 20 voucher",
                amount: 5.45,
                price: 20.0,
            },
            Offer {
                id: "GV-100",
                display_name: "AED 100 voucher",
                amount: 27.23,
                price: 100.0,
            },
        ],
    },
];

/// The provider with this code.
pub(crate) fn provider(code: &str) -> Option<&'static Provider> {
    PROVIDERS.iter().find(|p| p.code == code)
}
