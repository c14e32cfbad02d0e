-- Layout 1 of FlywayRecipesIT: a service whose migrations live in Flyway's default location,
-- classpath:db/migration, numbered above the toolkit's versions (V1, V100).
CREATE TABLE inventory (sku TEXT PRIMARY KEY, stock INT NOT NULL);
SELECT fencing.protect_table('inventory');
