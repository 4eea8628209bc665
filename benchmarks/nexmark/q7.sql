-- Nexmark q7, highest bid: per 10 s tumbling window, the bids at the window's highest price
-- (ties all kept). Each batch emits the updated list of every window it changed; a window's
-- last list, once the watermark passes its end, is its answer. Measures ranking rows of a
-- window: each map task keeps its batch's top bids per window, so few cross the exchange.

CREATE TABLE bid (
    auction   BIGINT  NOT NULL,
    bidder    BIGINT  NOT NULL,
    price     BIGINT  NOT NULL,
    channel   VARCHAR NOT NULL,
    url       VARCHAR NOT NULL,
    date_time BIGINT  NOT NULL,
    extra     VARCHAR NOT NULL,
    WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND
) WITH (connector = 'generator', kind = 'nexmark', tables = 'bid', rate = '1000000', partitions = '2');

CREATE TABLE discard (auction BIGINT, price BIGINT, bidder BIGINT, date_time BIGINT, extra VARCHAR,
                      window_start BIGINT)
WITH (connector = 'blackhole');

INSERT INTO discard
SELECT auction, price, bidder, date_time, extra, window_start FROM (
    SELECT *, RANK() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rownum
    FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND))
) WHERE rownum <= 1;
