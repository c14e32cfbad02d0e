-- Stands in for the migration a later release of the toolkit adds, numbered above every released one
-- (FlywayRecipesIT: upgrading the toolkit under each recipe).
CREATE TABLE fencing.next_release (id INT PRIMARY KEY);
