-- Topology views at scale (issue 24): the group index of 0027 (organisation_id, topology_id,
-- group_id) shares its first two columns with the primary key. Where topology_nodes has no
-- statistics yet (a new installation, a first build), the planner costs both alike and may take
-- it for the foreign-key checks of topology_edges (organisation_id, topology_id, node_id): each
-- inserted edge then reads every node of its view, 0.5 ms an edge at 2,000 hosts, quadratic in
-- the view's size. Two partial indexes serve what it served (a view's top level, the members of
-- open groups) and cannot serve a lookup by node id, which is left to the primary key.
DROP INDEX topology_nodes_group_idx;
CREATE INDEX topology_nodes_top_idx ON topology_nodes (organisation_id, topology_id) WHERE group_id IS NULL;
CREATE INDEX topology_nodes_member_idx ON topology_nodes (organisation_id, topology_id, group_id) WHERE group_id IS NOT NULL;
