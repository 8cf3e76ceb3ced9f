-- Topology views at scale (issue 24): hosts are grouped (by subnet, VLAN, service or role, the choice
-- recorded in the view), a group holds at most a few hundred members, and a view has no node
-- ceiling. A member's position is kept relative to its group (moving the group moves it); a node
-- that changes group is laid out again. Labels are read from the current rows through `ref_id`
-- (the host or network a node stands for), so a rename shows without a rebuild.

ALTER TABLE topologies ADD COLUMN group_by text NOT NULL DEFAULT 'subnet' CHECK (group_by IN ('subnet', 'vlan', 'service', 'role'));
ALTER TABLE topologies ADD COLUMN group_count integer NOT NULL DEFAULT 0;
-- What the filters offer (VLANs with their names, services called), written by each build.
ALTER TABLE topologies ADD COLUMN facets jsonb NOT NULL DEFAULT '{"vlans": [], "services": []}';

ALTER TABLE topology_nodes ADD COLUMN group_id text;
ALTER TABLE topology_nodes ADD COLUMN ref_id uuid;
CREATE INDEX topology_nodes_group_idx ON topology_nodes (organisation_id, topology_id, group_id);

ALTER TABLE topology_edges ADD COLUMN source_group text;
ALTER TABLE topology_edges ADD COLUMN target_group text;

-- Positions saved before grouping were absolute: the next build lays every view out again.
UPDATE topologies SET status = 'stale' WHERE status = 'ready';
DELETE FROM topology_nodes;
