-- Reckon's run history: a record of what happened, never read back to decide what a stream
-- processes (offsets and state live in the Delta tables).

-- A pipeline run (bronze, silver, gold, then the check) or a run of some streams.
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    lab           TEXT NOT NULL,
    -- Who or what started it: cli, api, button, schedule, send-and-run, play.
    started_by    TEXT NOT NULL,
    -- Resets of the lab before this run: runs of an earlier generation are history of old data.
    generation    INTEGER NOT NULL,
    started_at    TEXT NOT NULL,
    finished_at   TEXT,
    -- running, succeeded, failed.
    status        TEXT NOT NULL,
    error         TEXT
);
CREATE INDEX runs_by_lab ON runs (lab, id);

-- Every figure of a stream run (SPEC §3); `record` holds the whole run record as JSON.
CREATE TABLE stream_runs (
    run_id            INTEGER NOT NULL REFERENCES runs (id),
    stream            TEXT NOT NULL,
    rows_read         INTEGER NOT NULL,
    rows_written      INTEGER NOT NULL,
    rows_late         INTEGER NOT NULL,
    rows_duplicate    INTEGER NOT NULL,
    rows_rejected     INTEGER NOT NULL,
    table_version     INTEGER,
    watermark_before  TEXT,
    watermark_after   TEXT,
    duration_ms       INTEGER NOT NULL,
    record            TEXT NOT NULL,
    PRIMARY KEY (run_id, stream)
);

-- One row per line the check printed.
CREATE TABLE check_findings (
    run_id          INTEGER NOT NULL REFERENCES runs (id),
    line            INTEGER NOT NULL,
    verdict         TEXT NOT NULL,
    text            TEXT NOT NULL,
    hour            TEXT,
    orders          INTEGER,
    revenue         TEXT,
    bronze_orders   INTEGER,
    bronze_revenue  TEXT,
    PRIMARY KEY (run_id, line)
);

-- What was sent to the lab's topic through Reckon, and where Kafka stored it.
CREATE TABLE produced_events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    lab          TEXT NOT NULL,
    produced_at  TEXT NOT NULL,
    -- cli, form, api, scenario:<name>:<batch>, send-again.
    source       TEXT NOT NULL,
    topic        TEXT NOT NULL,
    "partition"  INTEGER NOT NULL,
    "offset"     INTEGER NOT NULL,
    event        TEXT NOT NULL
);
CREATE INDEX produced_by_lab ON produced_events (lab, id);

-- Resets of a lab: the topic recreated and the tables removed; earlier history is kept.
CREATE TABLE resets (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    lab    TEXT NOT NULL,
    at     TEXT NOT NULL,
    topic  TEXT NOT NULL
);
