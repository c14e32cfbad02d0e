-- Layout 2 of FlywayRecipesIT: a service whose migrations live outside classpath:db/migration and are
-- numbered from V1, as most services' are: they collide with the toolkit's V1.
CREATE TABLE inventory (sku TEXT PRIMARY KEY, stock INT NOT NULL);
