-- Nexmark q3, local item suggestion, as a window join: the sellers in Oregon, Idaho or
-- California paired with each auction of category 10 they open in the 10 s window they are in.
-- Persons and auctions are one stream (tables = 'person,auction'), told apart by event_type.

CREATE TABLE nexmark (
    event_type VARCHAR NOT NULL,
    id         BIGINT,
    name       VARCHAR,
    city       VARCHAR,
    state      VARCHAR,
    seller     BIGINT,
    category   BIGINT,
    date_time  BIGINT  NOT NULL,
    WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND
) WITH (connector = 'generator', kind = 'nexmark', tables = 'person,auction', rate = '1000000', partitions = '2');

CREATE VIEW person AS SELECT id, name, city, state, date_time FROM nexmark WHERE event_type = 'person';
CREATE VIEW auction AS SELECT id, seller, category, date_time FROM nexmark WHERE event_type = 'auction';

CREATE TABLE discard (name VARCHAR, city VARCHAR, state VARCHAR, auction_id BIGINT, window_start BIGINT)
WITH (connector = 'blackhole');

INSERT INTO discard
SELECT P.name, P.city, P.state, A.id AS auction_id, P.window_start
FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(date_time), INTERVAL '10' SECOND)) P
JOIN TABLE(TUMBLE(TABLE auction, DESCRIPTOR(date_time), INTERVAL '10' SECOND)) A
  ON P.id = A.seller AND P.window_start = A.window_start AND P.window_end = A.window_end
WHERE A.category = 10 AND P.state IN ('or', 'id', 'ca');
