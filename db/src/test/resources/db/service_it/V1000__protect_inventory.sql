-- A service's own migration, numbered after the fencing range (V1..V199 are the toolkit's).
SELECT fencing.protect_table('inventory');
