-- The service each request was meant for: its base URL and a fingerprint of the account's plain
-- settings (never a secret). Recovery, abandon and a resend leave an entry of another service
-- alone. NULL on entries written before this column existed: they are taken as this service's.
ALTER TABLE whish_journal_entries ADD COLUMN target TEXT;
