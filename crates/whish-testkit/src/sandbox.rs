//! A sandbox whose accounts never stop a test.

use rust_decimal::Decimal;
use whish_sandbox::Sandbox;

/// A sandbox whose transfer account holds `balance` USD under limits of 10 000 000 USD: a
/// payout batch is stopped by the account only when `balance` runs out.
///
/// # Panics
/// When the sandbox cannot start.
pub async fn funded_sandbox(balance: u64) -> Sandbox {
    let plenty = Decimal::from(10_000_000u64);
    Sandbox::builder()
        .transfer_balance("USD", Decimal::from(balance))
        .limits("USD", plenty, plenty)
        .start()
        .await
        .expect("sandbox")
}
