-- Internet exposure (issue 25), defined once: what the services list and filter, the findings
-- triage (exposed first) and the host page read. A service present and open is exposed when a cloud
-- account still lists its host and says the internet reaches the port:
-- - an EC2 instance (or a network interface of no instance: a load balancer's) with a public
--   address whose security groups admit the port (or every port) from 0.0.0.0/0 or ::/0;
-- - a Kubernetes service whose port is published (LoadBalancer, NodePort) or behind an ingress.
-- `via` says why, for people (the first reason when there are several).
CREATE VIEW service_exposure AS
SELECT s.organisation_id, s.id AS service_id, min(x.via) AS via
FROM services s
JOIN cloud_resources c ON c.organisation_id = s.organisation_id AND c.host_id = s.host_id AND c.gone_at IS NULL
CROSS JOIN LATERAL (
  SELECT 'security group ' || (r->>'groupId') || ' admits ' ||
         CASE WHEN r->>'protocol' = 'all' THEN 'every port' ELSE (r->>'protocol') || ' ' || (r->>'fromPort') || CASE WHEN r->>'fromPort' <> r->>'toPort' THEN '-' || (r->>'toPort') ELSE '' END END ||
         ' from ' || CASE WHEN r->'cidrs' ? '0.0.0.0/0' THEN '0.0.0.0/0' ELSE '::/0' END AS via
  FROM jsonb_array_elements(c.inbound) r
  WHERE c.kind IN ('instance', 'interface') AND cardinality(c.public_addresses) > 0
    AND (r->'cidrs' ? '0.0.0.0/0' OR r->'cidrs' ? '::/0')
    AND (r->>'protocol' = 'all' OR (r->>'protocol' = s.protocol AND s.port BETWEEN (r->>'fromPort')::int AND (r->>'toPort')::int))
  UNION ALL
  SELECT coalesce(p->>'via', 'published by Kubernetes')
  FROM jsonb_array_elements(c.ports) p
  WHERE (p->>'exposed')::boolean AND (p->>'port')::int = s.port AND p->>'protocol' = s.protocol
) x
WHERE s.gone_at IS NULL AND s.state = 'open'
GROUP BY s.organisation_id, s.id;
