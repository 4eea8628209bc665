-- Nexmark q5, hot items: per 10 s window sliding every 2 s, the auctions with the most bids
-- (ties all kept). The bids are counted per auction and window, then the counts of each
-- window are ranked in one partition: two exchanges.

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

CREATE TABLE discard (window_start BIGINT, auction BIGINT, num BIGINT, rank BIGINT)
WITH (connector = 'blackhole');

INSERT INTO discard
SELECT window_start, auction, num, rownum FROM (
    SELECT auction, COUNT(*) AS num, window_start, window_end,
           RANK() OVER (PARTITION BY window_start, window_end ORDER BY COUNT(*) DESC) AS rownum
    FROM TABLE(HOP(TABLE bid, DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
    GROUP BY auction, window_start, window_end
) WHERE rownum <= 1;
