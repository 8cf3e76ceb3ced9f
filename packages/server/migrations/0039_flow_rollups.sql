-- Flow storage for the reads that exist (issue 30): host topology over 1 hour to 30 days and the
-- application view's 24 hours read rollups per conversation (source, destination, port, protocol)
-- and hour or day; raw records are read only where no rollup covers the window yet (its first
-- partial hour, and the hour or so since the last rollup). Ingest is then one insert into a table
-- whose only index is a BRIN on time (records arrive in time order), instead of two btree
-- insertions a record. Job flows.rollup builds the hours of closed hours and the days of closed
-- days; a record arriving for an hour already rolled is added to its rollup by the ingest itself.
DROP INDEX flows_dst_ip_idx;
DROP INDEX flows_src_ip_idx;
CREATE INDEX flows_bucket_brin ON flows USING brin (bucket_start) WITH (pages_per_range = 32);

-- One row per conversation and hour (flow_hours) or UTC day (flow_days); partitioned by day like
-- the records (flow_hours_YYYYMMDD, flow_days_YYYYMMDD), created with them and dropped with them.
CREATE TABLE flow_hours (
  organisation_id  uuid NOT NULL,
  hour             timestamptz NOT NULL,
  src_ip           inet NOT NULL,
  dst_ip           inet NOT NULL,
  dst_port         integer NOT NULL,
  protocol         text NOT NULL,
  bytes            bigint NOT NULL,
  packets          bigint NOT NULL,
  flows            bigint NOT NULL,
  last_seen        timestamptz NOT NULL
) PARTITION BY RANGE (hour);
-- A host's callers (by destination address; the key of the rollup's upsert) and destinations.
CREATE UNIQUE INDEX flow_hours_key ON flow_hours (organisation_id, dst_ip, hour, src_ip, dst_port, protocol);
CREATE INDEX flow_hours_src_idx ON flow_hours (organisation_id, src_ip, hour);

CREATE TABLE flow_days (
  organisation_id  uuid NOT NULL,
  day              timestamptz NOT NULL,
  src_ip           inet NOT NULL,
  dst_ip           inet NOT NULL,
  dst_port         integer NOT NULL,
  protocol         text NOT NULL,
  bytes            bigint NOT NULL,
  packets          bigint NOT NULL,
  flows            bigint NOT NULL,
  last_seen        timestamptz NOT NULL
) PARTITION BY RANGE (day);
CREATE UNIQUE INDEX flow_days_key ON flow_days (organisation_id, dst_ip, day, src_ip, dst_port, protocol);
CREATE INDEX flow_days_src_idx ON flow_days (organisation_id, src_ip, day);

-- How far each organisation's records are rolled up: every record before hours_until is in
-- flow_hours, every one before days_until in flow_days (both UTC-aligned). A delivery holds its
-- organisation's row FOR SHARE while it stores records (adding those below a mark to the rollups
-- itself); the job holds it FOR UPDATE while it rolls and moves the marks, so a record is counted
-- by exactly one of them. Created by the organisation's first delivery.
CREATE TABLE flow_rollups (
  organisation_id  uuid PRIMARY KEY REFERENCES organisations (id) ON DELETE CASCADE,
  hours_until      timestamptz NOT NULL,
  days_until       timestamptz NOT NULL
);
-- Records stored before this migration: rolled up by the job's first runs from their first hour.
INSERT INTO flow_rollups (organisation_id, hours_until, days_until)
SELECT f.organisation_id, date_trunc('hour', min(f.bucket_start), 'UTC'), date_trunc('day', min(f.bucket_start), 'UTC')
FROM flows f JOIN organisations o ON o.id = f.organisation_id
GROUP BY f.organisation_id;
