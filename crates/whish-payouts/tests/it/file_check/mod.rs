//! File check.

mod changed_after_limit;
mod chunks;
mod invisible_refs;
mod json_bool;
mod json_not_utf8;
mod key_by_line;
mod nationality;
