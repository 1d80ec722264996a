-- The inbox: a change a service reported is an entry too (state `waiting`, then `handed-on`),
-- recorded before the receiver answers 200. Prune deletes handed-on changes through the same
-- index of the final entries, which now names the inbox's final state as well.
DROP INDEX IF EXISTS whish_journal_entries_final_updated;
CREATE INDEX whish_journal_entries_final_updated ON whish_journal_entries (state, updated_ms)
    WHERE state IN ('accepted', 'handed-on', 'refused');
