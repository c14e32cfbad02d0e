-- Layout 2 of FlywayRecipesIT: a service whose migrations live outside Flyway's default location,
-- numbered above the toolkit's versions (V1, V100).
CREATE TABLE inventory (sku TEXT PRIMARY KEY, stock INT NOT NULL);
SELECT fencing.protect_table('inventory');
