//! Two runs.

mod not_sent_already_paid;
mod stopped_run;
mod two_batch_names;
