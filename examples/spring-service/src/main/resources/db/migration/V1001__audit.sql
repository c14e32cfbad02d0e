CREATE TABLE audit (
    name TEXT PRIMARY KEY,
    runs INTEGER NOT NULL
);
SELECT fencing.protect_table('public.audit');
INSERT INTO audit (name, runs) VALUES ('stock', 0);
