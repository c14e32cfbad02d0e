-- Stands in for a later migration of the toolkit numbered below a released one (V100): FlywayRecipesIT
-- shows Flyway refusing it on every database that has V100.
CREATE TABLE fencing.next_release (id INT PRIMARY KEY);
