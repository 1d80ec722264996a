//! Reopen.

mod race;
mod reply_lost;
