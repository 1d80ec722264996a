//! Reconcile.

mod against_sandbox;
mod cents_and_days;
mod collect_days;
mod day_edges;
mod legitimate_days;
mod records_disagree;
