CREATE TABLE inventory (
    sku   TEXT PRIMARY KEY,
    stock INTEGER NOT NULL CHECK (stock >= 0)
);
SELECT fencing.protect_table('public.inventory');

CREATE TABLE orders (
    id  TEXT PRIMARY KEY,
    sku TEXT NOT NULL,
    qty INTEGER NOT NULL
);

CREATE TABLE reservation_log (
    id    BIGSERIAL PRIMARY KEY,
    sku   TEXT NOT NULL,
    token BIGINT NOT NULL,
    event TEXT NOT NULL
);
