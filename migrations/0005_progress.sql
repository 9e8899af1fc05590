-- The classroom's evidence Reckon did not keep before (issue "The classroom"): each consumer
-- group's read from the Topic page, and the lab's writing tasks.

CREATE TABLE group_reads (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    lab          TEXT NOT NULL,
    at           TEXT NOT NULL,
    group_name   TEXT NOT NULL,
    -- JSON of the shared types: where it resumed per partition, what it committed.
    resumed      TEXT NOT NULL,
    committed    TEXT NOT NULL,
    messages     INTEGER NOT NULL,
    -- The lab's newest sent event (produced_events.id) when it read: more sent since shows as
    -- a larger one.
    sent_before  INTEGER NOT NULL
);
CREATE INDEX group_reads_by_lab ON group_reads (lab, id);

-- Each save of a writing task (the director note, the check questions): the newest counts.
CREATE TABLE writings (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    lab   TEXT NOT NULL,
    task  TEXT NOT NULL,
    text  TEXT NOT NULL,
    at    TEXT NOT NULL
);
CREATE INDEX writings_by_lab ON writings (lab, task, id);
