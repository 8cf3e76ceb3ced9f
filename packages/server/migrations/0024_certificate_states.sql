-- Issue 23: one definition of a "current" certificate, read by the certificates list, the
-- overview's and the metric's expiry counts, and the notify.certificates job.
--
-- A certificate is
--   `replaced` when a newer one (seen later) was seen on the same endpoint: the same host,
--              address and port;
--   `gone`     when its port's service is no longer there: the host has TCP service rows on
--              that port and none of them is live (each is gone, or closed);
--   `current`  otherwise: the certificate the endpoint presents now.
-- A port without any service row (TLS reported on a port the scan did not list) is not "gone":
-- absence must be observed, never assumed.
CREATE VIEW certificate_states AS
SELECT c.organisation_id, c.id,
  CASE
    WHEN EXISTS (
      SELECT 1 FROM certificates n
      WHERE n.organisation_id = c.organisation_id AND n.host_id = c.host_id
        AND n.port IS NOT DISTINCT FROM c.port AND n.address IS NOT DISTINCT FROM c.address
        AND n.last_seen_at > c.last_seen_at
    ) THEN 'replaced'
    WHEN c.port IS NOT NULL
      AND EXISTS (SELECT 1 FROM services s WHERE s.organisation_id = c.organisation_id AND s.host_id = c.host_id AND s.protocol = 'tcp' AND s.port = c.port)
      AND NOT EXISTS (
        SELECT 1 FROM services s
        WHERE s.organisation_id = c.organisation_id AND s.host_id = c.host_id AND s.protocol = 'tcp' AND s.port = c.port
          AND s.gone_at IS NULL AND s.state <> 'closed'
      ) THEN 'gone'
    ELSE 'current'
  END AS state
FROM certificates c;
