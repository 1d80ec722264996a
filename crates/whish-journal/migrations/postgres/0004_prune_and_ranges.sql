-- Unknown states are found through the (state, id) index, as the ranges between the states this
-- version knows: the partial index of 0003 named one version's states, and a later version's
-- query would not match it.
DROP INDEX IF EXISTS whish_journal_entries_unknown_state;
-- Prune reads only what it deletes: the final entries by when they last changed (an index of
-- the final entries only, so that the write of an intent, the durable one, does not grow), and
-- the status changes by when they were delivered. It read every final entry, or every status
-- change, to find none eligible.
CREATE INDEX whish_journal_entries_final_updated ON whish_journal_entries (state, updated_ms)
    WHERE state IN ('accepted', 'refused');
CREATE INDEX whish_journal_notifications_delivered ON whish_journal_notifications (delivered_ms);
