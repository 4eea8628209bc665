-- Nexmark q2, selection: the bids on every 123rd auction.

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

CREATE TABLE discard (auction BIGINT, price BIGINT)
WITH (connector = 'blackhole');

INSERT INTO discard
SELECT auction, price FROM bid WHERE auction % 123 = 0;
