//! The check for a payment made before: the recent sends whose transfer exists or may yet,
//! read a page at a time.

use crate::entry::{REPEAT_LOOKBACK, State, may_have_paid};
use crate::store::{Along, SendRow};
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
            let page = db.sends_page(target, Along::Down { floor, before }).await?;
            let full = page.len() as i64 == crate::store::SEND_PAGE;
            visit_page(&page, &mut visit);
            match page.last() {
                Some(last) if full => before = last.id,
                _ => return Ok(()),
            }
        }
    }

    /// Where the journal's sends end now: those recorded later are after this mark
    /// ([`sends_that_may_have_paid_since`](Self::sends_that_may_have_paid_since)). Take it
    /// while holding [`lock_repeat_check`](Self::lock_repeat_check): every send recorded under
    /// the lock afterwards (by any process that takes it) is then after the mark.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached or read.
    pub async fn sends_mark(&self) -> Result<SendsMark, JournalError> {
        Ok(SendsMark(self.inner.db.last_id().await?))
    }

    /// Hand `visit` each money-transfer send to `target` that may have paid already, recorded
    /// after `mark` (the default mark: among the [`REPEAT_LOOKBACK`] most recent entries),
    /// oldest first, a page at a time; return the mark after every entry read. What a long
    /// check (a payout batch) reads again before each write under the repeat check: the sends
    /// recorded since it last looked.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the database cannot be reached or read.
    pub async fn sends_that_may_have_paid_since(
        &self,
        target: &str,
        mark: SendsMark,
        mut visit: impl FnMut(RecordedSend<'_>),
    ) -> Result<SendsMark, JournalError> {
        self.inner.background_written().await;
        let db = &self.inner.db;
        // Every entry up to here is read below (those of other kinds or accounts passed
        // over): the next read starts after it, whatever this one finds.
        let last = db.last_id().await?;
        // A mark taken by `sends_mark` stands for a check already made: only the default
        // one is bounded by the lookback.
        let mut after = if mark == SendsMark::default() {
            match db.lookback_floor(REPEAT_LOOKBACK).await? {
                Some(floor) => floor - 1,
                None => return Ok(SendsMark(last)),
            }
        } else {
            mark.0
        };
        loop {
            let page = db.sends_page(target, Along::Up { after }).await?;
            visit_page(&page, &mut visit);
            if let Some(newest) = page.last() {
                after = newest.id;
            }
            if page.len() as i64 != crate::store::SEND_PAGE {
                return Ok(SendsMark(after.max(last).max(mark.0)));
            }
        }
    }

    /// Wait until this process is the only one checking this journal for a payment made before,
    /// and hold that until the [`RepeatCheckLock`] is released or dropped.
    ///
    /// A check ([`sends_that_may_have_paid`](Self::sends_that_may_have_paid), or a look at the
    /// open entries) followed by a send's intent is two steps: two processes sending the same
    /// body at once (a script run twice, two terminals) can each check before either has
    /// recorded its send, and both pay. Take this lock, check, write the intent with
    /// [`JournaledTransfer::reserve_under`](crate::JournaledTransfer::reserve_under), release
    /// the lock, then send what it holds
    /// ([`send_reserved`](crate::JournaledTransfer::send_reserved)): whoever checks next sees
    /// the send just recorded. Every process that checks must take it; a check made without it
    /// proves nothing about sends started at the same time.
    ///
    /// On SQLite it is an exclusive lock (`flock`) on the directory that holds the journal
    /// file, found through the file's real path (journals sharing a directory take turns; a
    /// journal named through a symbolic link locks what its real name locks); on unix no file
    /// is created, so a full disk or a directory this process cannot write does not stop it
    /// (elsewhere it is a file beside the journal, `<journal>-repeat-lock`). The lock is this
    /// machine's: processes on other machines sharing the file over a network filesystem are
    /// not kept apart (SQLite's WAL mode does not support those anyway). On PostgreSQL it is a
    /// session-level advisory lock on a connection of its own, which needs a direct connection
    /// or session pooling (a pooler in transaction mode would hand the session to others), and
    /// the intent written under it commits on that session, so a session that ends (which
    /// lets the lock go) fails the write instead of recording an intent another process could
    /// not see. Either lock is let go by the operating system or the server when the process
    /// holding it dies (on PostgreSQL, within a minute when its machine is gone). It waits for
    /// as long as another holder keeps it, so hold it only across a check and a write, never
    /// across a call to the service.
    ///
    /// # Errors
    ///
    /// A `JournalError` when the journal's directory cannot be opened or locked, or the
    /// database cannot be reached.
    pub async fn lock_repeat_check(&self) -> Result<RepeatCheckLock, JournalError> {
        Ok(RepeatCheckLock {
            held: self.inner.db.repeat_lock().await?,
        })
    }
}

/// Hand `visit` each send of `page` that may have paid already.
fn visit_page(page: &[SendRow], visit: &mut impl FnMut(RecordedSend<'_>)) {
    for row in page {
        if let Some(state) = row.state.filter(|s| may_have_paid(*s)) {
            visit(RecordedSend {
                key: &row.key,
                state,
                request: &row.request,
            });
        }
    }
}

/// Where a check for a payment made before stopped reading a journal's sends
/// ([`Journal::sends_mark`]); the default is before every send.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SendsMark(pub(crate) i64);

/// This process's hold on a journal's repeat check ([`Journal::lock_repeat_check`]).
#[derive(Debug)]
#[must_use = "the repeat check is held only while this lives"]
pub struct RepeatCheckLock {
    held: crate::store::RepeatLock,
}

impl RepeatCheckLock {
    /// Let the next process check. Dropping it does too; on PostgreSQL `release` also tells
    /// the server at once, where a dropped lock waits for the server to see its connection
    /// closed.
    pub async fn release(self) {
        self.held.release().await;
    }

    /// The lock itself, for a write made under it.
    pub(crate) fn store_lock(&mut self) -> &mut crate::store::RepeatLock {
        &mut self.held
    }
}
