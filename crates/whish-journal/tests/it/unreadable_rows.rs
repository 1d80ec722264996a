//! `Journal::unreadable` looks at every row of the journal, a page at a time: a row it cannot
//! read is named wherever it is (the first row, either side of a page's edge, the last), once,
//! oldest first, and one bad row never hides another. `Journal::list_with_unreadable` names
//! those among the rows its listing selects, and every row in a state this version does not
//! know. SQLite files and the PostgreSQL server when one is given.

use crate::support::{Place, fill, journal_sql, places};
use whish_journal::{Listing, State};

/// Give the rows `bad_outcomes` an outcome this version cannot parse, and the rows
/// `unknown_states` a state it does not know (`frozen`).
async fn spoil(place: &Place, bad_outcomes: &[i64], unknown_states: &[i64]) {
    let ids = |ids: &[i64]| {
        ids.iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let sql = format!(
        "UPDATE whish_journal_entries SET outcome = '{{not json' WHERE id IN ({})",
        ids(bad_outcomes)
    );
    assert_eq!(journal_sql(place, &sql).await, bad_outcomes.len() as u64);
    let sql = format!(
        "UPDATE whish_journal_entries SET state = 'frozen' WHERE id IN ({})",
        ids(unknown_states)
    );
    assert_eq!(journal_sql(place, &sql).await, unknown_states.len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_unreadable_row_is_named_wherever_it_lies_in_the_journal() {
    for place in places("unreadable-rows").await {
        let journal = place.open().await;
        fill(&place, 2_500).await;
        // Outcomes this version cannot parse, at the first row, on both sides of the first
        // pages' edges and at the last; a state it does not know in the middle.
        spoil(&place, &[1, 1_000, 1_001, 2_000, 2_001, 2_500], &[1_500]).await;

        let unreadable = journal.unreadable().await.expect("read the journal");
        let ids: Vec<i64> = unreadable.iter().map(|u| u.id).collect();
        assert_eq!(
            ids,
            [1, 1_000, 1_001, 1_500, 2_000, 2_001, 2_500],
            "{unreadable:?}"
        );
        assert!(
            unreadable
                .iter()
                .all(|u| u.key.starts_with("filler-") && !u.reason.is_empty()),
            "{unreadable:?}"
        );
        assert!(
            unreadable[3].reason.contains("frozen"),
            "the unknown state is named: {:?}",
            unreadable[3]
        );
        journal.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_names_the_unreadable_rows_it_selects_and_every_unknown_state() {
    for place in places("unreadable-listing").await {
        let journal = place.open().await;
        fill(&place, 2_500).await;
        // A state this version does not know, outside the first listing and inside it.
        spoil(&place, &[1, 2_400], &[1_500, 2_450]).await;
        let ids = |u: &[whish_journal::Unreadable]| u.iter().map(|u| u.id).collect::<Vec<_>>();

        // The newest 200 rows: rows 2 400 and 2 450 are among them, unreadable, and are not
        // entries; row 1 is not; an unknown state is named wherever it is, and once.
        let (entries, unreadable) = journal
            .list_with_unreadable(&Listing::new().limit(200))
            .await
            .expect("list");
        assert_eq!(entries.len(), 198);
        assert!(
            entries
                .iter()
                .all(|e| e.id > 2_300 && e.id != 2_400 && e.id != 2_450)
        );
        assert_eq!(
            ids(&unreadable),
            [2_450, 2_400, 1_500],
            "newest first: {unreadable:?}"
        );
        // What `list` returns is the same entries.
        let listed = journal
            .list(&Listing::new().limit(200))
            .await
            .expect("list");
        assert_eq!(listed, entries);

        // Refused rows only, the newest ten: none of the spoiled outcomes is among them.
        let (entries, unreadable) = journal
            .list_with_unreadable(&Listing::new().state(State::Refused).limit(10))
            .await
            .expect("list");
        assert_eq!(entries.len(), 10);
        assert_eq!(ids(&unreadable), [2_450, 1_500], "{unreadable:?}");
        journal.close().await;
    }
}
