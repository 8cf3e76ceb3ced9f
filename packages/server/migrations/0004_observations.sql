-- What reconciliation needs beyond the inventory tables: the fingerprints that identify a host
-- (several daemons, or a merge by MAC, may name one host), and the layer-2/3 facts.

CREATE TABLE host_fingerprints (
  organisation_id  uuid NOT NULL,
  fingerprint      text NOT NULL,
  host_id          uuid NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, fingerprint),
  FOREIGN KEY (organisation_id, host_id) REFERENCES hosts (organisation_id, id) ON DELETE CASCADE
);
CREATE INDEX host_fingerprints_host_idx ON host_fingerprints (organisation_id, host_id);
INSERT INTO host_fingerprints (organisation_id, fingerprint, host_id) SELECT organisation_id, fingerprint, id FROM hosts;

CREATE INDEX host_addresses_mac_idx ON host_addresses (organisation_id, mac) WHERE mac IS NOT NULL;
CREATE INDEX host_interfaces_mac_idx ON host_interfaces (organisation_id, mac) WHERE mac IS NOT NULL;

CREATE TABLE host_neighbors (
  organisation_id     uuid NOT NULL,
  host_id             uuid NOT NULL,
  local_interface     text NOT NULL,
  remote_chassis_id   text NOT NULL,
  remote_port_id      text,
  remote_system_name  text,
  management_address  inet,
  protocol            text NOT NULL CHECK (protocol IN ('lldp', 'cdp')),
  first_seen_at       timestamptz NOT NULL DEFAULT now(),
  last_seen_at        timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, host_id, local_interface, remote_chassis_id),
  FOREIGN KEY (organisation_id, host_id) REFERENCES hosts (organisation_id, id) ON DELETE CASCADE
);

CREATE TABLE host_vlans (
  organisation_id  uuid NOT NULL,
  host_id          uuid NOT NULL,
  vlan_id          integer NOT NULL CHECK (vlan_id BETWEEN 0 AND 4095),
  name             text,
  tagged           text[] NOT NULL DEFAULT '{}',
  untagged         text[] NOT NULL DEFAULT '{}',
  last_seen_at     timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, host_id, vlan_id),
  FOREIGN KEY (organisation_id, host_id) REFERENCES hosts (organisation_id, id) ON DELETE CASCADE
);

CREATE TABLE host_routes (
  organisation_id  uuid NOT NULL,
  host_id          uuid NOT NULL,
  destination      cidr NOT NULL,
  next_hop         inet,
  interface        text NOT NULL DEFAULT '',
  metric           integer,
  last_seen_at     timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, host_id, destination, interface),
  FOREIGN KEY (organisation_id, host_id) REFERENCES hosts (organisation_id, id) ON DELETE CASCADE
);

CREATE TABLE host_lag_groups (
  organisation_id  uuid NOT NULL,
  host_id          uuid NOT NULL,
  name             text NOT NULL,
  protocol         text CHECK (protocol IN ('lacp', 'static')),
  members          text[] NOT NULL DEFAULT '{}',
  last_seen_at     timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, host_id, name),
  FOREIGN KEY (organisation_id, host_id) REFERENCES hosts (organisation_id, id) ON DELETE CASCADE
);
