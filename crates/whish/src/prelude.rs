//! The types almost every integration names: `use whish::prelude::*;`.
//!
//! It holds the shared value types and, for each enabled service, its client, request builders
//! and outcome types. Error types stay behind their module (`whish::transfer::Error`, ...) because
//! each service has its own code enum.

pub use whish_core::{
    Amount, CallOptions, ClientSettings, Currency, DayMonthYear, Decimal, ExternalId, Outcome,
    RequestId, RetryPolicy, SecretString, SetupError, UserAgent, verdict::Verdict,
};

#[cfg(feature = "money-transfer")]
#[cfg_attr(docsrs, doc(cfg(feature = "money-transfer")))]
pub use whish_money_transfer::{
    CashCollectionSend, CashReceiver, CountryId, Customer, DateOfBirth, FeeRequest, FirstName,
    Identity, LastName, MobileWalletSend, PaymentMode, Reason, ReportRange, SendOutcome, Sender,
    SourceOfFunds, StatusQuery, TransferClient, TransferCode, TransferStatus, WalletReceiver,
};

#[cfg(feature = "locations")]
#[cfg_attr(docsrs, doc(cfg(feature = "locations")))]
pub use whish_locations::{LocationsClient, ShopFilter};

#[cfg(feature = "hosted-collect")]
#[cfg_attr(docsrs, doc(cfg(feature = "hosted-collect")))]
pub use whish_hosted_collect::{
    CollectClient, CollectCode, CollectStatus, CollectUrls, FailureCallbackUrl, FailureRedirectUrl,
    NewPayment, SuccessCallbackUrl, SuccessRedirectUrl,
};

#[cfg(feature = "intl-topup")]
#[cfg_attr(docsrs, doc(cfg(feature = "intl-topup")))]
pub use whish_intl_topup::{PayOutcome, PayRequest, ProviderId, TopupClient, TopupCode};
