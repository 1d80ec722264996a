//! Abandon.

mod checks;
mod races;
