-- Layout 2 of FlywayRecipesIT: a service whose migrations live outside Flyway's default location,
-- numbered after the toolkit's range (V1..V999).
CREATE TABLE inventory (sku TEXT PRIMARY KEY, stock INT NOT NULL);
SELECT fencing.protect_table('inventory');
