-- A class: labs made together from a pasted list, one per line. A line is kept as pasted, so a
-- list pasted again makes labs only for the lines not seen before.

CREATE TABLE classes (
    name        TEXT PRIMARY KEY,
    created_at  TEXT NOT NULL
);

CREATE TABLE class_members (
    class       TEXT NOT NULL,
    line        TEXT NOT NULL,
    lab         TEXT NOT NULL,
    PRIMARY KEY (class, line)
);
CREATE INDEX class_members_by_lab ON class_members (lab);
