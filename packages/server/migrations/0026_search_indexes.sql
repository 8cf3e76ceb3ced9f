-- The services filters and the console's search (issue 23): port exact, CPE and version by
-- case-insensitive prefix (text_pattern_ops serves `LIKE 'abc%'` and equality), each leading with
-- the organisation. A port index ending in seq pages a port's services in keyset order directly.
-- Product is matched by substring, which no btree serves: with a port, version or CPE it rides
-- on their index; alone it reads the organisation's services once (100,000 in tens of ms).
CREATE INDEX services_port_idx ON services (organisation_id, port, seq);
CREATE INDEX services_cpe_prefix_idx ON services (organisation_id, lower(cpe) text_pattern_ops) WHERE cpe IS NOT NULL;
CREATE INDEX services_version_idx ON services (organisation_id, lower(version) text_pattern_ops) WHERE version IS NOT NULL;
-- The search box finds CVEs by the start of their id among an organisation's findings.
CREATE INDEX vulnerabilities_cve_prefix_idx ON vulnerabilities (organisation_id, upper(cve_id) text_pattern_ops);
