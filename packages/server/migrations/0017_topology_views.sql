-- Topology views (issue #15, decisions.md "Other"): each topology's nodes and edges, with ids
-- derived from what they stand for (host:<host id>, network:<network id>, device:<chassis id>,
-- dep:<host id>|<service id>, ...), so a rebuild keeps them and the positions saved for them.
-- The node layout is internal (spec 2.3): the public collection only counts nodes and edges.

ALTER TABLE topologies ADD COLUMN failure_reason text;

CREATE TABLE topology_nodes (
  organisation_id  uuid NOT NULL,
  topology_id      uuid NOT NULL,
  node_id          text NOT NULL,
  kind             text NOT NULL,
  label            text NOT NULL,
  data             jsonb NOT NULL DEFAULT '{}',
  -- Top-left corner of the node's box in the view; kept across rebuilds while the node exists.
  x                double precision NOT NULL,
  y                double precision NOT NULL,
  PRIMARY KEY (organisation_id, topology_id, node_id),
  FOREIGN KEY (organisation_id, topology_id) REFERENCES topologies (organisation_id, id) ON DELETE CASCADE
);

CREATE TABLE topology_edges (
  organisation_id  uuid NOT NULL,
  topology_id      uuid NOT NULL,
  edge_id          text NOT NULL,
  source           text NOT NULL,
  target           text NOT NULL,
  kind             text NOT NULL,
  label            text NOT NULL DEFAULT '',
  data             jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (organisation_id, topology_id, edge_id),
  FOREIGN KEY (organisation_id, topology_id, source) REFERENCES topology_nodes (organisation_id, topology_id, node_id) ON DELETE CASCADE,
  FOREIGN KEY (organisation_id, topology_id, target) REFERENCES topology_nodes (organisation_id, topology_id, node_id) ON DELETE CASCADE
);

-- One read-only share link per view; only the SHA-256 of its token is stored. Revoking deletes it.
CREATE TABLE topology_shares (
  organisation_id     uuid NOT NULL,
  topology_id         uuid NOT NULL,
  token_hash          text NOT NULL,
  expires_at          timestamptz NOT NULL,
  created_by_user_id  uuid,
  created_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, topology_id),
  FOREIGN KEY (organisation_id, topology_id) REFERENCES topologies (organisation_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX topology_shares_token_key ON topology_shares (token_hash);
