-- Issue 23, hosts at an operator's scale.
--
-- A host is gone when a completed scan session whose CIDR covers all of its addresses no longer
-- found it (decisions.md "Scan sessions": only a completed session marks things absent); seen
-- again, it is back (gone_at null).
ALTER TABLE hosts ADD COLUMN gone_at timestamptz;
-- The console lists the hosts present by default: keyset pages over them stay one index range scan.
CREATE INDEX hosts_present_page_idx ON hosts (organisation_id, seq) WHERE gone_at IS NULL;

-- The host search also matches the start of the vendor and of the OS (case-insensitive), as the
-- names are matched (text_pattern_ops serves LIKE 'abc%').
CREATE INDEX hosts_vendor_idx ON hosts (organisation_id, lower(vendor) text_pattern_ops);
CREATE INDEX hosts_os_idx ON hosts (organisation_id, lower(os) text_pattern_ops);
