-- Nexmark q8, monitor new users: the persons who open an auction in the 10 s window they join
-- in, once per window however many auctions (the published query groups both sides by window
-- first; SELECT DISTINCT with the person's id is the same rows from one window join).

CREATE TABLE nexmark (
    event_type VARCHAR NOT NULL,
    id         BIGINT,
    name       VARCHAR,
    seller     BIGINT,
    date_time  BIGINT  NOT NULL,
    WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND
) WITH (connector = 'generator', kind = 'nexmark', tables = 'person,auction', rate = '1000000', partitions = '2');

CREATE VIEW person AS SELECT id, name, date_time FROM nexmark WHERE event_type = 'person';
CREATE VIEW auction AS SELECT seller, date_time FROM nexmark WHERE event_type = 'auction';

CREATE TABLE discard (id BIGINT, name VARCHAR, window_start BIGINT)
WITH (connector = 'blackhole');

INSERT INTO discard
SELECT DISTINCT P.id, P.name, P.window_start
FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(date_time), INTERVAL '10' SECOND)) P
JOIN TABLE(TUMBLE(TABLE auction, DESCRIPTOR(date_time), INTERVAL '10' SECOND)) A
  ON P.id = A.seller AND P.window_start = A.window_start AND P.window_end = A.window_end;
