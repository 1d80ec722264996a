-- One row per money-moving request, written before its first byte is sent.
CREATE TABLE whish_journal_entries (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    service        TEXT    NOT NULL,
    operation      TEXT    NOT NULL,
    idem_key       TEXT    NOT NULL,
    context        TEXT,
    request        BLOB    NOT NULL,
    state          TEXT    NOT NULL,
    attempts       INTEGER NOT NULL,
    created_ms     INTEGER NOT NULL,
    updated_ms     INTEGER NOT NULL,
    outcome        TEXT,
    refs           TEXT,
    lease_owner    TEXT,
    lease_until_ms INTEGER,
    UNIQUE (service, operation, idem_key)
);
CREATE INDEX whish_journal_entries_state ON whish_journal_entries (state, id);

-- One row per (transfer, status) delivered to the integrator's code: a callback repeating a
-- recorded status is not a new event.
CREATE TABLE whish_journal_status_changes (
    transfer_id TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    request_id  INTEGER NOT NULL,
    recorded_ms INTEGER NOT NULL,
    PRIMARY KEY (transfer_id, status)
);
