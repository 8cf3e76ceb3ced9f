-- Issue 30: a host page is one index range scan over `hosts`. What the page shows of a host's other
-- rows is stored on the host where those rows are written (inventory/host-summaries.ts, called by
-- reconciliation, a completed scan's absence marking and host merges, in their transactions),
-- instead of three correlated subqueries per listed host:
--   addresses        its addresses (host_addresses), as host() text, in address order;
--   macs             the distinct MACs of its addresses and interfaces, as text, in text order;
--   open_port_count  its services open and present (state 'open', gone_at null).
-- Constant defaults: adding the columns rewrites nothing; the backfill below is one pass.
ALTER TABLE hosts
  ADD COLUMN addresses text[] NOT NULL DEFAULT '{}',
  ADD COLUMN macs text[] NOT NULL DEFAULT '{}',
  ADD COLUMN open_port_count integer NOT NULL DEFAULT 0;

UPDATE hosts h SET
  addresses = coalesce(v.addresses, '{}'),
  macs = coalesce(v.macs, '{}'),
  open_port_count = coalesce(v.open_port_count, 0)
FROM (
  SELECT k.organisation_id, k.host_id, a.addresses, m.macs, s.open_port_count
  FROM (
    SELECT organisation_id, host_id FROM host_addresses
    UNION SELECT organisation_id, host_id FROM host_interfaces WHERE mac IS NOT NULL
    UNION SELECT organisation_id, host_id FROM services WHERE state = 'open' AND gone_at IS NULL
  ) k
  LEFT JOIN (
    SELECT organisation_id, host_id, array_agg(host(address) ORDER BY address) AS addresses
    FROM host_addresses GROUP BY organisation_id, host_id
  ) a ON a.organisation_id = k.organisation_id AND a.host_id = k.host_id
  LEFT JOIN (
    SELECT organisation_id, host_id, array_agg(DISTINCT mac::text ORDER BY mac::text) AS macs
    FROM (
      SELECT organisation_id, host_id, mac FROM host_addresses WHERE mac IS NOT NULL
      UNION ALL SELECT organisation_id, host_id, mac FROM host_interfaces WHERE mac IS NOT NULL
    ) x GROUP BY organisation_id, host_id
  ) m ON m.organisation_id = k.organisation_id AND m.host_id = k.host_id
  LEFT JOIN (
    SELECT organisation_id, host_id, count(*)::int AS open_port_count
    FROM services WHERE state = 'open' AND gone_at IS NULL GROUP BY organisation_id, host_id
  ) s ON s.organisation_id = k.organisation_id AND s.host_id = k.host_id
) v
WHERE h.organisation_id = v.organisation_id AND h.id = v.host_id;

-- The `gone=only` filter pages the (few) gone hosts by their own index, as `gone=exclude` pages the
-- present ones (hosts_present_page_idx, migration 0020), not the page index filtered row by row.
CREATE INDEX hosts_gone_page_idx ON hosts (organisation_id, seq) WHERE gone_at IS NOT NULL;
