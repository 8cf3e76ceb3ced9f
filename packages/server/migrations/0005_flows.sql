-- Flow records (spec 2.5), partitioned by day on bucket_start: pruning past the 30-day topology
-- window is a DROP of a partition, and a window reads only its days. Partitions are created on
-- demand by the ingest path (flows_YYYYMMDD).
CREATE TABLE flows (
  organisation_id  uuid NOT NULL,
  bucket_start     timestamptz NOT NULL,
  daemon_id        uuid NOT NULL,
  src_ip           inet NOT NULL,
  dst_ip           inet NOT NULL,
  dst_port         integer NOT NULL CHECK (dst_port BETWEEN 0 AND 65535),
  protocol         text NOT NULL,
  packets          bigint NOT NULL CHECK (packets >= 0),
  bytes            bigint NOT NULL CHECK (bytes >= 0),
  source           text NOT NULL,
  src_host_id      uuid,
  dst_host_id      uuid,
  dst_service_id   uuid,
  received_at      timestamptz NOT NULL DEFAULT now()
) PARTITION BY RANGE (bucket_start);
-- A retried delivery must not count a conversation twice.
CREATE UNIQUE INDEX flows_record_key ON flows (organisation_id, daemon_id, bucket_start, src_ip, dst_ip, dst_port, protocol, source);
CREATE INDEX flows_dst_host_idx ON flows (organisation_id, dst_host_id, bucket_start);
CREATE INDEX flows_src_host_idx ON flows (organisation_id, src_host_id, bucket_start);
