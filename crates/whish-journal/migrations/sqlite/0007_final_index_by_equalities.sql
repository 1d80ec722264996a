-- The index of the final entries, its condition written as equalities. SQLite evaluates a
-- partial index's condition on every row an insert or a state change touches, and an `IN`
-- list of three values builds a temporary table each time it is evaluated there (twice for a
-- state change: the old row and the new); equalities compare in place. A prune's `state = ?`
-- still implies the condition, so it reads the same index.
DROP INDEX IF EXISTS whish_journal_entries_final_updated;
CREATE INDEX whish_journal_entries_final_updated ON whish_journal_entries (state, updated_ms)
    WHERE state = 'accepted' OR state = 'handed-on' OR state = 'refused';
