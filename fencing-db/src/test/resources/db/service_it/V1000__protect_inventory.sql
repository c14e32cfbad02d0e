-- A service's own migration, numbered above the toolkit's versions (V1, V100).
SELECT fencing.protect_table('inventory');
