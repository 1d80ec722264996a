//! The rows a check read, kept for the run that follows it, so that a file of a few thousand
//! rows is read and parsed once, not twice. A file too large to keep is read again by the run,
//! as a stream: what is kept is bounded ([`KEPT_BYTES`]), and dropped whole once it would pass
//! the bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use whish_core::CallbackAddresses;
use whish_journal::Journal;

use crate::row::{Payout, RawRow};

/// About how much memory the rows kept from one check may take: their values' bytes, the
/// bodies of the transfers the check prepared, and [`ROW_OVERHEAD`] a row. A file past it is
/// read again by the run.
pub(crate) const KEPT_BYTES: usize = 8 << 20;

/// A parsed row's memory beyond its values' bytes (its request's fields, the vector's slot).
const ROW_OVERHEAD: usize = 512;

/// A row as the run reads it: the row, or the first reason it is bad (`None`: no reason given).
pub(crate) type Parsed = Result<Payout, Option<String>>;

/// A new configuration's mark: rows kept by a check are used only by a run of the same
/// configuration (the same batch, file, format, defaults and options), never another's.
pub(crate) fn new_configuration() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The rows of one check, in file order, while they stay under the bound.
#[derive(Clone, Default)]
pub(crate) struct Kept {
    /// The configuration that read them ([`new_configuration`]); 0: nothing kept.
    configuration: u64,
    /// How the client that prepared the rows' transfers checks callback addresses: a run's
    /// client that checks them otherwise prepares each row again.
    callbacks: CallbackAddresses,
    /// The journal the check read: a run of another looks every row up again.
    journal: Option<Journal>,
    rows: Vec<Parsed>,
    bytes: usize,
    /// Past the bound: nothing kept, and nothing more is.
    dropped: bool,
}

impl Kept {
    pub(crate) fn new(
        configuration: u64,
        callbacks: CallbackAddresses,
        journal: Option<Journal>,
    ) -> Kept {
        Kept {
            configuration,
            callbacks,
            journal,
            ..Kept::default()
        }
    }

    /// Keep the next row of the file, read as `raw` (when it could be) and parsed as `row`: its
    /// place, while rows are kept (a row put there later replaces it, [`put`](Self::put)).
    pub(crate) fn push(&mut self, raw: Option<&RawRow>, row: Parsed) -> Option<usize> {
        let values: usize = raw.map_or(0, RawRow::bytes);
        if !self.counted(values + ROW_OVERHEAD) {
            return None;
        }
        self.rows.push(row);
        Some(self.rows.len() - 1)
    }

    /// Put `row`, with the transfer its check prepared, in the place [`push`](Self::push)
    /// gave it.
    pub(crate) fn put(&mut self, place: usize, row: Payout) {
        let body = row.prepared.as_ref().map_or(0, |p| p.body().len());
        if self.counted(body)
            && let Some(slot) = self.rows.get_mut(place)
        {
            *slot = Ok(row);
        }
    }

    /// Count `bytes` more kept: false (and nothing kept from now on) past the bound.
    fn counted(&mut self, bytes: usize) -> bool {
        if self.dropped {
            return false;
        }
        self.bytes += bytes;
        if self.bytes > KEPT_BYTES {
            self.dropped = true;
            self.rows = Vec::new();
            return false;
        }
        true
    }

    /// Whether these are every row of the file, kept by a check of `configuration`.
    fn usable_for(&self, configuration: u64) -> bool {
        self.configuration == configuration && configuration != 0 && !self.dropped
    }
}

/// The kept rows are what the check read, not what it found: two reports that found the same
/// are equal, and a report prints the number of rows kept, not the rows.
impl PartialEq for Kept {
    fn eq(&self, _: &Kept) -> bool {
        true
    }
}

impl Eq for Kept {}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kept")
            .field("rows", &self.rows.len())
            .field("dropped", &self.dropped)
            .finish()
    }
}

/// Shared between clones of a report; the run takes the rows out when it holds the only one.
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub(crate) struct SharedKept(pub(crate) Arc<Kept>);

impl SharedKept {
    /// Whether the check read `journal` (the same opening of it).
    pub(crate) fn read(&self, journal: &Journal) -> bool {
        self.0.journal.as_ref().is_some_and(|j| j.same_as(journal))
    }

    /// Every row of the file, when all were kept by a check of `configuration`; copied only
    /// when another clone of the report holds them too. The transfers the check prepared stay
    /// with them only for a client that checks callback addresses as the check's did, and
    /// what the check found in the journal only for a run on the journal it read
    /// (`same_journal`, see [`read`](Self::read)).
    pub(crate) fn take_for(
        self,
        configuration: u64,
        callbacks: CallbackAddresses,
        same_journal: bool,
    ) -> Option<Vec<Parsed>> {
        if !self.0.usable_for(configuration) {
            return None;
        }
        let prepared_alike = self.0.callbacks == callbacks;
        let mut rows =
            Arc::try_unwrap(self.0).map_or_else(|shared| shared.rows.clone(), |kept| kept.rows);
        for p in rows.iter_mut().flatten() {
            if !prepared_alike {
                p.prepared = None;
            }
            if !same_journal {
                p.absent = false;
            }
        }
        Some(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(bytes: usize) -> RawRow {
        RawRow::of(2, &[("reference", &"x".repeat(bytes))])
    }

    #[test]
    fn rows_are_kept_for_the_configuration_that_read_them_only() {
        let mut kept = Kept::new(7, CallbackAddresses::PublicOnly, None);
        kept.push(Some(&raw(10)), Err(Some("bad".into())));
        kept.push(None, Err(None));
        let shared = SharedKept(Arc::new(kept));
        assert!(
            shared
                .clone()
                .take_for(8, CallbackAddresses::PublicOnly, false)
                .is_none(),
            "another configuration's"
        );
        assert!(
            SharedKept::default()
                .take_for(0, CallbackAddresses::PublicOnly, false)
                .is_none(),
            "nothing kept"
        );
        let rows = shared
            .take_for(7, CallbackAddresses::PublicOnly, false)
            .expect("kept");
        assert_eq!(rows.len(), 2);
    }

    #[test]
    fn what_the_check_found_in_the_journal_is_kept_only_for_a_run_on_that_journal() {
        let raw = RawRow::of(
            2,
            &[
                ("reference", "R-1"),
                ("receiver_first_name", "Rami"),
                ("receiver_last_name", "Haddad"),
                ("receiver_phone", "+96170123456"),
                ("receiver_date_of_birth", "07-03-1990"),
                ("amount", "10"),
                ("currency", "USD"),
                ("reason", "Family Support"),
                ("source_of_funds", "Savings"),
                ("sender_first_name", "Relief"),
                ("sender_last_name", "Org"),
                ("sender_phone", "+9611000000"),
                ("from_country", "1"),
            ],
        );
        let mut p = crate::row::payout(&raw, &crate::Defaults::new(), "b", true).expect("row");
        p.absent = true;
        let kept = |same: bool| {
            let mut kept = Kept::new(3, CallbackAddresses::PublicOnly, None);
            kept.push(Some(&raw), Ok(p.clone()));
            let rows = SharedKept(Arc::new(kept))
                .take_for(3, CallbackAddresses::PublicOnly, same)
                .expect("kept");
            rows.into_iter().next().expect("one").expect("a row").absent
        };
        assert!(kept(true), "the check's word, on its journal");
        assert!(!kept(false), "another journal: looked up again");
    }

    #[test]
    fn rows_past_the_bound_are_dropped_whole_and_none_kept_after() {
        let mut kept = Kept::new(1, CallbackAddresses::PublicOnly, None);
        let big = KEPT_BYTES / 4;
        for _ in 0..3 {
            assert!(kept.push(Some(&raw(big)), Err(None)).is_some());
        }
        assert_eq!(
            kept.push(Some(&raw(big)), Err(None)),
            None,
            "past the bound"
        );
        assert_eq!(kept.push(Some(&raw(1)), Err(None)), None, "none kept after");
        assert!(
            SharedKept(Arc::new(kept))
                .take_for(1, CallbackAddresses::PublicOnly, false)
                .is_none(),
            "a partial file is never taken for the whole"
        );
    }
}
