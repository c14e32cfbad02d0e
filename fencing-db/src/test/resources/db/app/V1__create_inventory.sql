-- Recipe 2 of FlywayRecipesIT: a service whose migrations are numbered from V1, as most services' are:
-- in one history they would collide with the toolkit's V1, so the toolkit keeps a history of its own.
CREATE TABLE inventory (sku TEXT PRIMARY KEY, stock INT NOT NULL);
