-- The home-gateway pipeline as a query: per day, the ten gateways that moved the most bytes.
-- Each gateway reports its traffic counters about once a minute; INCREMENTS turns readings
-- into the bytes each one adds (in event-time order, late readings folded in), and the
-- outer query keeps every day's top 10 as the totals change.

SET 'batch.interval' = '1s';
SET 'checkpoint.interval' = '5s';
SET 'state.ttl' = '2 d';

CREATE TABLE readings (
    gateway_id VARCHAR NOT NULL,
    `date`     BIGINT  NOT NULL,
    ipTx       DOUBLE  NOT NULL,
    ipRx       DOUBLE  NOT NULL,
    -- A reading may arrive up to two minutes after a later one of its gateway.
    WATERMARK FOR `date` AS `date` - INTERVAL '2' MINUTE
) WITH (
    connector = 'generator',
    kind = 'gateway',
    gateways = '200',
    partitions = '2',
    encoding = 'counter'
);

SELECT day, rank, gateway_id, total
FROM (
    SELECT `date` / 86400000 AS day, gateway_id, SUM(ipTx + ipRx) AS total,
           ROW_NUMBER() OVER (PARTITION BY `date` / 86400000 ORDER BY SUM(ipTx + ipRx) DESC) AS rank
    FROM TABLE(INCREMENTS(TABLE readings, DESCRIPTOR(gateway_id), DESCRIPTOR(ipTx, ipRx), 'counter'))
    GROUP BY `date` / 86400000, gateway_id
)
WHERE rank <= 10;
