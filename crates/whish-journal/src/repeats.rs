//! The check for a payment made before: the recent sends whose transfer exists or may yet,
//! read a page at a time.

use crate::entry::{REPEAT_LOOKBACK, State, may_have_paid};
use crate::{Journal, JournalError};

/// A money-transfer send as a check for a payment made before reads it
/// ([`Journal::sends_that_may_have_paid`]).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RecordedSend<'a> {
    /// Its Request-id.
    pub key: &'a str,
    /// Its state: accepted, or not final.
    pub state: State,
    /// Its exact body, byte for byte.
    pub request: &'a [u8],
}

impl Journal {
    /// Hand `visit` each money-transfer send to `target` (a client's `target()`) that may have
    /// paid already ([`Entry::may_have_paid`](crate::Entry::may_have_paid)) among the
    /// [`REPEAT_LOOKBACK`] most recent entries, newest first.
    ///
    /// What a check that a payment is not made twice needs (the same exact body under another
    /// Request-id is the same payment), read a page of sends at a time: the check holds a page
    /// in memory, never the journal, and only a send's Request-id, state and body leave the
    /// database. ([`list`](Self::list) of as many entries holds every one of them, whole.)
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached or read.
    pub async fn sends_that_may_have_paid(
        &self,
        target: &str,
        mut visit: impl FnMut(RecordedSend<'_>),
    ) -> Result<(), JournalError> {
        self.inner.background_written().await;
        let db = &self.inner.db;
        let Some(floor) = db.lookback_floor(REPEAT_LOOKBACK).await? else {
            return Ok(());
        };
        let mut before = i64::MAX;
        loop {
            let page = db.sends_page(target, floor, before).await?;
            let full = page.len() as i64 == crate::store::SEND_PAGE;
            for row in &page {
                if let Some(state) = row.state.filter(|s| may_have_paid(*s)) {
                    visit(RecordedSend {
                        key: &row.key,
                        state,
                        request: &row.request,
                    });
                }
            }
            match page.last() {
                Some(last) if full => before = last.id,
                _ => return Ok(()),
            }
        }
    }
}
