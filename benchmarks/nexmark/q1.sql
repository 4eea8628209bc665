-- Nexmark q1, currency conversion: every bid's price in euros (float64: sleet has no decimal).

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

CREATE TABLE discard (auction BIGINT, bidder BIGINT, price DOUBLE, date_time BIGINT, extra VARCHAR)
WITH (connector = 'blackhole');

INSERT INTO discard
SELECT auction, bidder, 0.908 * price AS price, date_time, extra FROM bid;
