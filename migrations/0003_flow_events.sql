-- The event log (PIPELINES §6): one event per flow per run, the check included, replacing the
-- stream runs. The figures a flow counts, and the events it dropped, are JSON of the shared types
-- (`app::model::Figures`, `DroppedEvent`): a new figure needs no new column.

CREATE TABLE flow_events (
    run_id       INTEGER NOT NULL REFERENCES runs (id),
    -- The flow's place in its run, from 0.
    seq          INTEGER NOT NULL,
    -- bronze, silver, gold, check (and, with the pipeline engine, a project's flows).
    flow         TEXT NOT NULL,
    -- The table the flow writes; NULL for the check.
    target       TEXT,
    -- COMPLETED, IDLE, FAILED, SKIPPED.
    status       TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    duration_ms  INTEGER NOT NULL,
    error        TEXT,
    figures      TEXT NOT NULL,
    dropped      TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

INSERT INTO flow_events (run_id, seq, flow, target, status, started_at, duration_ms, error, figures, dropped)
SELECT run_id,
       row_number() OVER (PARTITION BY run_id ORDER BY rowid) - 1,
       stream,
       CASE stream WHEN 'bronze' THEN 'bronze_orders' WHEN 'silver' THEN 'orders' WHEN 'gold' THEN 'hourly_sales' END,
       CASE json_extract(record, '$.source.kind') WHEN 'nothing' THEN 'IDLE' ELSE 'COMPLETED' END,
       coalesce(json_extract(record, '$.started_at'), ''),
       duration_ms,
       NULL,
       json_object(
           'rows_read', rows_read, 'rows_written', rows_written, 'rows_late', rows_late,
           'rows_duplicate', rows_duplicate, 'rows_rejected', rows_rejected,
           'source', json(coalesce(json_extract(record, '$.source'), '{"kind":"nothing"}')),
           'table_version', table_version,
           'watermark_before', watermark_before, 'watermark_after', watermark_after,
           'hours_closed', json(coalesce(json_extract(record, '$.hours_closed'), '[]'))),
       coalesce(json_extract(record, '$.dropped'), '[]')
FROM stream_runs;

-- A run that checked has the check's event too (its duration was not recorded).
INSERT INTO flow_events (run_id, seq, flow, target, status, started_at, duration_ms, error, figures, dropped)
SELECT f.run_id, (SELECT count(*) FROM flow_events e WHERE e.run_id = f.run_id), 'check', NULL,
       'COMPLETED', runs.started_at, 0, NULL, '{}', '[]'
FROM (SELECT DISTINCT run_id FROM check_findings) f JOIN runs ON runs.id = f.run_id;

DROP TABLE stream_runs;

-- Verdicts are stored as the API sends them: `problem`, not the printed line's `PROBLEM`.
UPDATE check_findings SET verdict = lower(verdict);
