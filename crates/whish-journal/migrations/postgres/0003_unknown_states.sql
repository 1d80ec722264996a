-- The rows whose state this version does not know: a partial index that is empty in a healthy
-- journal, so that finding them costs nothing however many final entries the journal holds
-- (`state NOT IN (...)` read every row).
CREATE INDEX whish_journal_entries_unknown_state ON whish_journal_entries (id)
    WHERE state NOT IN ('intended', 'may-have-arrived', 'pending', 'accepted', 'refused', 'needs-operator');
