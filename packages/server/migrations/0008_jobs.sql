-- Scheduled jobs (spec 1.1): the status of each job, as a whole (organisation_id null) and per
-- organisation where the job works per organisation. Feeds job metrics and Settings → Jobs.
CREATE TABLE job_status (
  job              text NOT NULL,
  organisation_id  uuid REFERENCES organisations (id) ON DELETE CASCADE,
  last_run_at      timestamptz NOT NULL,
  duration_ms      integer NOT NULL CHECK (duration_ms >= 0),
  outcome          text NOT NULL CHECK (outcome IN ('ok', 'failed')),
  error            text,
  attempts         integer NOT NULL CHECK (attempts >= 1),
  detail           jsonb NOT NULL DEFAULT '{}',
  last_ok_at       timestamptz,
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX job_status_key ON job_status (job, coalesce(organisation_id, '00000000-0000-0000-0000-000000000000'::uuid));

-- What scan.schedule last did for a network: queued a scan, or skipped it and why.
ALTER TABLE networks
  ADD COLUMN schedule_checked_at timestamptz,
  ADD COLUMN schedule_outcome    text CHECK (schedule_outcome IN ('queued', 'skipped')),
  ADD COLUMN schedule_detail     text;

-- Snapshots keep their content: canonical JSON, gzip-compressed, with the SHA-256 of the
-- uncompressed text (for diffs and attestations). One scheduled snapshot per organisation and day
-- is already the unique index snapshots_scheduled_day_key (0002).
ALTER TABLE snapshots
  ADD COLUMN content        bytea,
  ADD COLUMN content_sha256 text,
  ADD COLUMN content_bytes  bigint;

-- Application topology (topology.dependencies): who calls which service, from recent flows.
-- The calling side is the source host (a flow's source port is ephemeral, so it names no service).
CREATE TABLE dependency_edges (
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  site_id          uuid,
  src_host_id      uuid NOT NULL,
  dst_host_id      uuid NOT NULL,
  dst_service_id   uuid NOT NULL,
  bytes            bigint NOT NULL,
  packets          bigint NOT NULL,
  flows            bigint NOT NULL,
  last_seen_at     timestamptz NOT NULL,
  built_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, src_host_id, dst_service_id)
);
CREATE INDEX dependency_edges_site_idx ON dependency_edges (organisation_id, site_id);
-- One topology of each kind per site (the organisation's hosts without a site: site_id null).
CREATE UNIQUE INDEX topologies_kind_site_key ON topologies (organisation_id, kind, coalesce(site_id, '00000000-0000-0000-0000-000000000000'::uuid));
