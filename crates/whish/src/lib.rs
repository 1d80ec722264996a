//! # whish
//!
//! One dependency for the whole SDK: each service crate is re-exported behind its cargo feature
//! (`money-transfer`, `locations`, `hosted-collect`, `intl-topup`, all on by default), and the
//! shared runtime once as [`core`].
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use whish_core as core;

/// Money transfers into Lebanon.
#[cfg(feature = "money-transfer")]
pub use whish_money_transfer as transfer;

/// Cash-collection locations.
#[cfg(feature = "locations")]
pub use whish_locations as locations;

/// Hosted wallet-payment collection.
#[cfg(feature = "hosted-collect")]
pub use whish_hosted_collect as collect;

/// International top-up.
#[cfg(feature = "intl-topup")]
pub use whish_intl_topup as topup;
