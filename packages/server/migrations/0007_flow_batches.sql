-- Flows are stored as the daemon sent them and resolved to the inventory when read (the
-- `flows_resolved` view; topology resolves each peer the same way). Ingest is then one plain
-- insert, close to COPY, and a flow seen before the sweep found its host resolves as soon as it
-- does. A retried delivery is recognised by the digest of its body (flow_batches) instead of a
-- per-record unique index, which cost as much as the rest of the insert.
CREATE TABLE flow_batches (
  organisation_id  uuid NOT NULL,
  daemon_id        uuid NOT NULL,
  digest           text NOT NULL,
  records          integer NOT NULL,
  received_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, daemon_id, digest)
);
CREATE INDEX flow_batches_received_idx ON flow_batches (received_at);

DROP INDEX flows_record_key;
DROP INDEX flows_dst_host_idx;
DROP INDEX flows_src_host_idx;
ALTER TABLE flows DROP COLUMN src_host_id, DROP COLUMN dst_host_id, DROP COLUMN dst_service_id;
-- A host's callers: flows to one of its addresses; its destinations: flows from one of them.
CREATE INDEX flows_dst_ip_idx ON flows (organisation_id, dst_ip, bucket_start);
CREATE INDEX flows_src_ip_idx ON flows (organisation_id, src_ip, bucket_start);

-- Each flow resolved: destination host by address and its service by (host, port, protocol),
-- source host by address; unknown peers null. An address held by several hosts resolves to one
-- of them, always the same.
CREATE VIEW flows_resolved AS
SELECT f.*, sa.host_id AS src_host_id, da.host_id AS dst_host_id, s.id AS dst_service_id
FROM flows f
LEFT JOIN LATERAL (SELECT a.host_id FROM host_addresses a WHERE a.organisation_id = f.organisation_id AND a.address = f.src_ip ORDER BY a.host_id LIMIT 1) sa ON true
LEFT JOIN LATERAL (SELECT a.host_id FROM host_addresses a WHERE a.organisation_id = f.organisation_id AND a.address = f.dst_ip ORDER BY a.host_id LIMIT 1) da ON true
LEFT JOIN services s ON s.organisation_id = f.organisation_id AND s.host_id = da.host_id AND s.port = f.dst_port
  AND s.protocol = CASE WHEN f.protocol IN ('tcp', 'udp', 'sctp') THEN f.protocol ELSE 'tcp' END;
