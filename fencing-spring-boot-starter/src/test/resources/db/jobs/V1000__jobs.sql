CREATE TABLE report (
    name        TEXT PRIMARY KEY,
    last_writer TEXT NOT NULL,
    runs        INTEGER NOT NULL
);
SELECT fencing.protect_table('public.report');
-- 'fenced' is written under the run's token, 'plain' by the same run as a plain UPDATE; 'tally' by another job
INSERT INTO report (name, last_writer, runs) VALUES ('fenced', 'nobody', 0), ('plain', 'nobody', 0), ('tally', 'nobody', 0);
