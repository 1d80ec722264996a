//! Envelope decoding on arbitrary bytes: `cargo fuzz run envelope -s none` (see the README).
//! The envelope and every response type decoded through it must return, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde::Deserialize;
use whish::core::Envelope;

#[derive(Deserialize)]
struct List<T> {
    #[allow(dead_code)]
    list: Vec<T>,
}

fn decode<T: serde::de::DeserializeOwned>(data: &[u8]) {
    if let Ok(e) = Envelope::<T>::from_slice(data) {
        let _ = e.outcome();
        let _ = e.is_replay();
    }
}

fuzz_target!(|data: &[u8]| {
    decode::<serde_json::Value>(data);
    decode::<whish::transfer::FeeQuote>(data);
    decode::<whish::transfer::StatusResult>(data);
    decode::<whish::transfer::Cancellation>(data);
    decode::<List<whish::transfer::SendingCountry>>(data);
    decode::<List<whish::transfer::ActivityEntry>>(data);
    decode::<List<whish::transfer::CurrencyStatement>>(data);
    decode::<Vec<whish::transfer::PaymentMode>>(data);
    decode::<Vec<whish::locations::Governorate>>(data);
    decode::<Vec<whish::locations::Shop>>(data);
    decode::<whish::collect::PaymentStatus>(data);
    decode::<whish::topup::Balance>(data);
});
