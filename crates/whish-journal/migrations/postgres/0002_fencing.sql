-- Fencing: every lease carries a token that grows with each take; every write about an entry is
-- conditional on the token its writer holds.
ALTER TABLE whish_journal_entries ADD COLUMN lease_token BIGINT NOT NULL DEFAULT 0;
