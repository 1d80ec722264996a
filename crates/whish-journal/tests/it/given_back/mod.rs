//! Given back.

mod outcome_lost;
mod outcome_write_fails;
