-- Unknown states are found through the (state, id) index, as the ranges between the states this
-- version knows: the partial index of 0003 named one version's states, and a later version's
-- query would not match it.
DROP INDEX IF EXISTS whish_journal_entries_unknown_state;
-- Prune reads only what it deletes: the final entries last changed before a time, and the status
-- changes delivered before a time (it read every final entry, or every status change, to find
-- none eligible).
CREATE INDEX whish_journal_entries_state_updated ON whish_journal_entries (state, updated_ms);
CREATE INDEX whish_journal_notifications_delivered ON whish_journal_notifications (delivered_ms);
