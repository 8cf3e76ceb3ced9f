-- Daemons, scan sessions, the daemon job queue and the change log.

CREATE TABLE daemons (
  organisation_id     uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  id                  uuid NOT NULL DEFAULT gen_random_uuid(),
  seq                 bigint GENERATED ALWAYS AS IDENTITY,
  key_id              uuid NOT NULL,
  name                text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  version             text NOT NULL DEFAULT '',
  os                  text NOT NULL DEFAULT '',
  arch                text NOT NULL DEFAULT '',
  capabilities        jsonb NOT NULL DEFAULT '{}',
  network_cidrs       cidr[] NOT NULL DEFAULT '{}',
  metadata            jsonb NOT NULL DEFAULT '{}',
  boot_id             uuid,
  restart_count       integer NOT NULL DEFAULT 0,
  site_id             uuid,
  site_set_in_ui      boolean NOT NULL DEFAULT false,
  status              text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'online', 'degraded')),
  loaded_signatures   jsonb NOT NULL DEFAULT '{}',
  flows_dropped       bigint NOT NULL DEFAULT 0,
  heartbeat_interval_seconds integer NOT NULL DEFAULT 30,
  last_heartbeat_at   timestamptz,
  last_seen_at        timestamptz,
  registered_at       timestamptz NOT NULL DEFAULT now(),
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, id),
  FOREIGN KEY (organisation_id, site_id) REFERENCES sites (organisation_id, id) ON DELETE SET NULL (site_id)
);
-- Registration is idempotent by name within the organisation.
CREATE UNIQUE INDEX daemons_name_key ON daemons (organisation_id, lower(name));
CREATE UNIQUE INDEX daemons_page_idx ON daemons (organisation_id, seq);
CREATE INDEX daemons_site_idx ON daemons (organisation_id, site_id, status);

CREATE TABLE scan_sessions (
  organisation_id      uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  id                   uuid NOT NULL DEFAULT gen_random_uuid(),
  seq                  bigint GENERATED ALWAYS AS IDENTITY,
  network_id           uuid NOT NULL,
  daemon_id            uuid NOT NULL,
  state                text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'dispatched', 'running', 'completed', 'failed', 'cancelled', 'stalled')),
  requested_by_key_id  uuid,
  cidr                 cidr NOT NULL,
  exclude_cidrs        cidr[] NOT NULL DEFAULT '{}',
  top_ports_tcp        integer NOT NULL,
  top_ports_udp        integer NOT NULL,
  nmap_enabled         boolean NOT NULL DEFAULT false,
  nmap_scripts         text[] NOT NULL DEFAULT '{}',
  hosts_total          bigint,
  hosts_scanned        bigint NOT NULL DEFAULT 0,
  ports_scanned        bigint NOT NULL DEFAULT 0,
  duration_ms          bigint,
  batches              integer NOT NULL DEFAULT 0,
  created_at           timestamptz NOT NULL DEFAULT now(),
  dispatched_at        timestamptz,
  started_at           timestamptz,
  last_batch_at        timestamptz,
  finished_at          timestamptz,
  updated_at           timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, id),
  FOREIGN KEY (organisation_id, network_id) REFERENCES networks (organisation_id, id) ON DELETE CASCADE,
  FOREIGN KEY (organisation_id, daemon_id) REFERENCES daemons (organisation_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX scan_sessions_page_idx ON scan_sessions (organisation_id, seq);
-- At most one queued or running session per network: the database enforces it, races included.
CREATE UNIQUE INDEX scan_sessions_active_key ON scan_sessions (organisation_id, network_id) WHERE state IN ('queued', 'dispatched', 'running', 'stalled');
CREATE INDEX scan_sessions_daemon_idx ON scan_sessions (organisation_id, daemon_id, state);

-- Jobs waiting for a daemon's poll: a network scan or the cancellation of one. Handed over once
-- (claimed with FOR UPDATE SKIP LOCKED), then kept as history.
CREATE TABLE daemon_jobs (
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  id               uuid NOT NULL DEFAULT gen_random_uuid(),
  seq              bigint GENERATED ALWAYS AS IDENTITY,
  daemon_id        uuid NOT NULL,
  kind             text NOT NULL CHECK (kind IN ('network', 'cancel')),
  session_id       uuid NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  delivered_at     timestamptz,
  PRIMARY KEY (organisation_id, id),
  FOREIGN KEY (organisation_id, daemon_id) REFERENCES daemons (organisation_id, id) ON DELETE CASCADE,
  FOREIGN KEY (organisation_id, session_id) REFERENCES scan_sessions (organisation_id, id) ON DELETE CASCADE
);
CREATE INDEX daemon_jobs_pending_idx ON daemon_jobs (organisation_id, daemon_id, seq) WHERE delivered_at IS NULL;

-- Every inventory change, in order: the source of the live stream and of events.
CREATE TABLE change_log (
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  id               bigint GENERATED ALWAYS AS IDENTITY,
  entity_type      text NOT NULL,
  entity_id        uuid NOT NULL,
  action           text NOT NULL CHECK (action IN ('created', 'updated', 'deleted')),
  at               timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, id)
);
CREATE INDEX change_log_time_idx ON change_log (organisation_id, at);
