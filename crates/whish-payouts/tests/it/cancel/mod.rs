//! Cancel.

mod applied_unanswered;
mod results_unwritable;
