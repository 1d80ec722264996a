//! Truth.

mod faults;
mod races;
