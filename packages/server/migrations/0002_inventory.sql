-- Inventory: sites, networks, hosts (addresses, interfaces), ports/services, certificates,
-- vulnerabilities, snapshots, topologies. Filled by daemon reconciliation; read by the API.
--
-- Every table leads its primary key and indexes with organisation_id. Each collection has a
-- `seq` identity: the API pages by keyset on (organisation_id, seq), which is insertion order,
-- unique and index-backed, so a page costs the same at any depth.

CREATE TABLE sites (
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  id               uuid NOT NULL DEFAULT gen_random_uuid(),
  seq              bigint GENERATED ALWAYS AS IDENTITY,
  code             text NOT NULL CHECK (length(code) BETWEEN 1 AND 100),
  name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  description      text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, id)
);
CREATE UNIQUE INDEX sites_code_key ON sites (organisation_id, lower(code));
CREATE UNIQUE INDEX sites_page_idx ON sites (organisation_id, seq);

CREATE TABLE networks (
  organisation_id        uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  id                     uuid NOT NULL DEFAULT gen_random_uuid(),
  seq                    bigint GENERATED ALWAYS AS IDENTITY,
  site_id                uuid,
  name                   text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  cidr                   cidr NOT NULL,
  exclude_cidrs          cidr[] NOT NULL DEFAULT '{}',
  scan_interval_minutes  integer CHECK (scan_interval_minutes BETWEEN 15 AND 10080),
  top_ports_tcp          integer NOT NULL DEFAULT 1000 CHECK (top_ports_tcp BETWEEN 0 AND 65535),
  top_ports_udp          integer NOT NULL DEFAULT 0 CHECK (top_ports_udp BETWEEN 0 AND 65535),
  nmap_enabled           boolean NOT NULL DEFAULT false,
  nmap_scripts           text[] NOT NULL DEFAULT '{}',
  last_scan_at           timestamptz,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, id),
  FOREIGN KEY (organisation_id, site_id) REFERENCES sites (organisation_id, id) ON DELETE SET NULL (site_id)
);
CREATE UNIQUE INDEX networks_cidr_key ON networks (organisation_id, cidr);
CREATE UNIQUE INDEX networks_page_idx ON networks (organisation_id, seq);
CREATE INDEX networks_site_idx ON networks (organisation_id, site_id, seq);

CREATE TABLE hosts (
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  id               uuid NOT NULL DEFAULT gen_random_uuid(),
  seq              bigint GENERATED ALWAYS AS IDENTITY,
  site_id          uuid,
  fingerprint      text NOT NULL,
  hostname         text,
  fqdn             text,
  vendor           text,
  os               text,
  device_type      text,
  parent_host_id   uuid,
  first_seen_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at     timestamptz NOT NULL DEFAULT now(),
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, id),
  FOREIGN KEY (organisation_id, site_id) REFERENCES sites (organisation_id, id) ON DELETE SET NULL (site_id),
  FOREIGN KEY (organisation_id, parent_host_id) REFERENCES hosts (organisation_id, id) ON DELETE SET NULL (parent_host_id)
);
CREATE UNIQUE INDEX hosts_fingerprint_key ON hosts (organisation_id, fingerprint);
CREATE UNIQUE INDEX hosts_page_idx ON hosts (organisation_id, seq);
CREATE INDEX hosts_site_idx ON hosts (organisation_id, site_id, seq);
-- Case-insensitive prefix search on names (text_pattern_ops serves LIKE 'abc%').
CREATE INDEX hosts_hostname_idx ON hosts (organisation_id, lower(hostname) text_pattern_ops);
CREATE INDEX hosts_fqdn_idx ON hosts (organisation_id, lower(fqdn) text_pattern_ops);
-- Fine-grained statistics on the names: with the default histogram the planner overestimates a
-- narrow prefix by 100x and walks the page index instead (seconds at a million hosts).
ALTER INDEX hosts_hostname_idx ALTER COLUMN 2 SET STATISTICS 1000;
ALTER INDEX hosts_fqdn_idx ALTER COLUMN 2 SET STATISTICS 1000;

CREATE TABLE host_addresses (
  organisation_id  uuid NOT NULL,
  host_id          uuid NOT NULL,
  address          inet NOT NULL CHECK (masklen(address) = CASE family(address) WHEN 4 THEN 32 ELSE 128 END),
  mac              macaddr,
  first_seen_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at     timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, host_id, address),
  FOREIGN KEY (organisation_id, host_id) REFERENCES hosts (organisation_id, id) ON DELETE CASCADE
);
-- Address and CIDR search: btree on inet serves `address <<= cidr` as a range scan.
CREATE INDEX host_addresses_address_idx ON host_addresses (organisation_id, address);

CREATE TABLE host_interfaces (
  organisation_id  uuid NOT NULL,
  host_id          uuid NOT NULL,
  name             text NOT NULL,
  mac              macaddr,
  first_seen_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at     timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, host_id, name),
  FOREIGN KEY (organisation_id, host_id) REFERENCES hosts (organisation_id, id) ON DELETE CASCADE
);

-- A port and what runs on it are one row: the port observation (state, banner) and the service
-- identification (name, product, version, CPE) share the key (host, protocol, port).
CREATE TABLE services (
  organisation_id   uuid NOT NULL,
  id                uuid NOT NULL DEFAULT gen_random_uuid(),
  seq               bigint GENERATED ALWAYS AS IDENTITY,
  host_id           uuid NOT NULL,
  address           inet,
  protocol          text NOT NULL CHECK (protocol IN ('tcp', 'udp', 'sctp')),
  port              integer NOT NULL CHECK (port BETWEEN 0 AND 65535),
  state             text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closed', 'filtered')),
  banner            text,
  name              text,
  product           text,
  vendor            text,
  version           text,
  cpe               text,
  signature_id      text,
  signature_source  text CHECK (signature_source IN ('core', 'custom', 'nmap')),
  confidence        smallint CHECK (confidence BETWEEN 0 AND 100),
  evidence          text,
  first_seen_at     timestamptz NOT NULL DEFAULT now(),
  last_seen_at      timestamptz NOT NULL DEFAULT now(),
  gone_at           timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, id),
  FOREIGN KEY (organisation_id, host_id) REFERENCES hosts (organisation_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX services_port_key ON services (organisation_id, host_id, protocol, port);
CREATE UNIQUE INDEX services_page_idx ON services (organisation_id, seq);
CREATE INDEX services_host_idx ON services (organisation_id, host_id, seq);
CREATE INDEX services_cpe_idx ON services (organisation_id, cpe) WHERE cpe IS NOT NULL;

CREATE TABLE certificates (
  organisation_id  uuid NOT NULL,
  id               uuid NOT NULL DEFAULT gen_random_uuid(),
  seq              bigint GENERATED ALWAYS AS IDENTITY,
  host_id          uuid NOT NULL,
  address          inet,
  port             integer CHECK (port BETWEEN 0 AND 65535),
  subject          text NOT NULL,
  issuer           text NOT NULL,
  not_before       timestamptz NOT NULL,
  not_after        timestamptz NOT NULL,
  sha256           text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  chain_pem        text[] NOT NULL DEFAULT '{}',
  trust_status     text NOT NULL CHECK (trust_status IN ('trusted', 'expired', 'not_yet_valid', 'self_signed', 'untrusted')),
  first_seen_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at     timestamptz NOT NULL DEFAULT now(),
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, id),
  FOREIGN KEY (organisation_id, host_id) REFERENCES hosts (organisation_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX certificates_seen_key ON certificates (organisation_id, host_id, coalesce(port, -1), sha256);
CREATE UNIQUE INDEX certificates_page_idx ON certificates (organisation_id, seq);
CREATE INDEX certificates_host_idx ON certificates (organisation_id, host_id, seq);
CREATE INDEX certificates_trust_idx ON certificates (organisation_id, trust_status, seq);
CREATE INDEX certificates_expiry_idx ON certificates (organisation_id, not_after);

CREATE TABLE vulnerabilities (
  organisation_id   uuid NOT NULL,
  id                uuid NOT NULL DEFAULT gen_random_uuid(),
  seq               bigint GENERATED ALWAYS AS IDENTITY,
  service_id        uuid NOT NULL,
  host_id           uuid NOT NULL,
  cve_id            text NOT NULL CHECK (cve_id ~ '^[A-Z][A-Z0-9]*-[0-9]{4}-[0-9]{4,}$' OR cve_id ~ '^[A-Za-z0-9._:-]{1,100}$'),
  title             text,
  severity          text NOT NULL CHECK (severity IN ('critical', 'high', 'medium', 'low', 'none')),
  cvss              numeric(3,1) CHECK (cvss BETWEEN 0 AND 10),
  state             text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'acknowledged', 'resolved', 'false_positive')),
  note              text CHECK (length(note) <= 2000),
  first_seen_at     timestamptz NOT NULL DEFAULT now(),
  last_seen_at      timestamptz NOT NULL DEFAULT now(),
  state_changed_at  timestamptz NOT NULL DEFAULT now(),
  resolved_at       timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, id),
  FOREIGN KEY (organisation_id, service_id) REFERENCES services (organisation_id, id) ON DELETE CASCADE,
  FOREIGN KEY (organisation_id, host_id) REFERENCES hosts (organisation_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX vulnerabilities_finding_key ON vulnerabilities (organisation_id, service_id, cve_id);
CREATE UNIQUE INDEX vulnerabilities_page_idx ON vulnerabilities (organisation_id, seq);
CREATE INDEX vulnerabilities_service_idx ON vulnerabilities (organisation_id, service_id, seq);
CREATE INDEX vulnerabilities_state_idx ON vulnerabilities (organisation_id, state, severity, seq);

CREATE TABLE snapshots (
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  id               uuid NOT NULL DEFAULT gen_random_uuid(),
  seq              bigint GENERATED ALWAYS AS IDENTITY,
  site_id          uuid,
  reason           text NOT NULL CHECK (reason IN ('scheduled', 'manual', 'pre_change', 'post_change', 'audit')),
  stats            jsonb NOT NULL,
  captured_at      timestamptz NOT NULL DEFAULT now(),
  capture_day      date NOT NULL DEFAULT (now() AT TIME ZONE 'UTC')::date,
  created_by_key_id uuid,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, id),
  FOREIGN KEY (organisation_id, site_id) REFERENCES sites (organisation_id, id) ON DELETE SET NULL (site_id)
);
CREATE UNIQUE INDEX snapshots_page_idx ON snapshots (organisation_id, seq);
CREATE INDEX snapshots_site_idx ON snapshots (organisation_id, site_id, seq);
-- One scheduled snapshot per organisation and UTC day: the hourly job's idempotency.
CREATE UNIQUE INDEX snapshots_scheduled_day_key ON snapshots (organisation_id, capture_day) WHERE reason = 'scheduled' AND site_id IS NULL;

CREATE TABLE topologies (
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  id               uuid NOT NULL DEFAULT gen_random_uuid(),
  seq              bigint GENERATED ALWAYS AS IDENTITY,
  site_id          uuid,
  kind             text NOT NULL CHECK (kind IN ('network', 'application')),
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'ready', 'stale', 'failed')),
  name             text NOT NULL,
  node_count       integer NOT NULL DEFAULT 0 CHECK (node_count >= 0),
  edge_count       integer NOT NULL DEFAULT 0 CHECK (edge_count >= 0),
  built_at         timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, id),
  FOREIGN KEY (organisation_id, site_id) REFERENCES sites (organisation_id, id) ON DELETE SET NULL (site_id)
);
CREATE UNIQUE INDEX topologies_page_idx ON topologies (organisation_id, seq);
CREATE INDEX topologies_site_idx ON topologies (organisation_id, site_id, seq);
CREATE UNIQUE INDEX topologies_scope_key ON topologies (organisation_id, kind, coalesce(site_id, '00000000-0000-0000-0000-000000000000'::uuid));
