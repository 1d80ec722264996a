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

-- One row per (subject, status) handed to the integrator's code: a transfer's status change
-- (subject `transfer:<id>`) or a hosted payment's (`collect:<externalId>`). A repeat is not a new
-- event. `delivered_ms` stays NULL until the integrator's handler finished: a claim that was
-- never delivered (a crash, a failed handler) can be claimed again after `recorded_ms` + lease.
CREATE TABLE whish_journal_notifications (
    subject      TEXT    NOT NULL,
    status       TEXT    NOT NULL,
    recorded_ms  INTEGER NOT NULL,
    delivered_ms INTEGER,
    PRIMARY KEY (subject, status)
);
