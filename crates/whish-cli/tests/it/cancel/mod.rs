//! Cancel.

mod faults;
mod killed_clock_moved;
mod never_left;
mod nothing_sent;
mod race;
