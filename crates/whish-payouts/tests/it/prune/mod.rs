//! Prune.

mod paid_rows;
mod retry_chain;
