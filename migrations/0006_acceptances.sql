-- A milestone the instructor accepted by hand, with why: shown beside what the evidence proves.
CREATE TABLE acceptances (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    lab        TEXT NOT NULL,
    milestone  TEXT NOT NULL,
    note       TEXT NOT NULL,
    at         TEXT NOT NULL
);
CREATE INDEX acceptances_by_lab ON acceptances (lab, milestone, id);

-- A class's viewer token shows its board with the learners' names (and labs' names) hidden
-- when the instructor chose so.
ALTER TABLE classes ADD COLUMN hide_names INTEGER NOT NULL DEFAULT 0;
