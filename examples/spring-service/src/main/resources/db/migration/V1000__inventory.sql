CREATE TABLE inventory (
    sku   TEXT PRIMARY KEY,
    stock INTEGER NOT NULL CHECK (stock >= 0)
);
SELECT fencing.protect_table('public.inventory');
