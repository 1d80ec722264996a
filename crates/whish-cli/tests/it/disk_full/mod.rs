//! Disk full.

mod journal;
mod results;
