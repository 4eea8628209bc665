-- The Yahoo Streaming Benchmark as a query: views of ads per campaign in 10-second windows.
-- `sleet submit examples/ysb.sql` runs it on the built-in generator; `sleet sql` prints the job.

SET 'batch.interval' = '100ms';

CREATE TABLE events (
    user_id    VARCHAR NOT NULL,
    page_id    VARCHAR NOT NULL,
    ad_id      VARCHAR NOT NULL,
    ad_type    VARCHAR NOT NULL,
    event_type VARCHAR NOT NULL,
    event_time BIGINT  NOT NULL,
    ip_address VARCHAR NOT NULL,
    -- The generator's partitions advance in step: no event arrives behind the newest.
    WATERMARK FOR event_time AS event_time
) WITH (
    connector = 'generator',
    kind = 'ysb',
    seed = '1',
    rate = '200000',
    partitions = '2',
    max_record_bytes = '4096'
);

-- Which campaign each ad belongs to, derived from the same seed.
CREATE TABLE campaigns (ad_id VARCHAR, campaign_id VARCHAR)
WITH (connector = 'generator', kind = 'ysb_campaigns', seed = '1');

SELECT window_start, c.campaign_id, COUNT(*) AS count
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(event_time), INTERVAL '10' SECOND)) e
JOIN campaigns c ON e.ad_id = c.ad_id
WHERE e.event_type = 'view'
GROUP BY window_start, window_end, c.campaign_id;
