-- Issue 30: the services page is one index range scan, as the hosts (0038) and certificates (0045)
-- pages are. Why the internet reaches a service (view service_exposure, 0029) depends on the
-- service and on the cloud resources of its host; the page probed cloud_resources for every open
-- service it listed and the view for those on a listed host (half of the page's cost), the
-- `exposed` filter evaluated the view for the whole organisation, and the findings list joined
-- the view per finding. It is now stored on the service, written in the transactions that write
-- those rows (inventory/host-summaries.ts: reconciliation of daemon batches and cloud syncs, a
-- completed scan's absence marking, host merges, the resources a cloud sync lists or no longer
-- lists, an account's removal). The view stays the definition that computes it.
ALTER TABLE services ADD COLUMN exposed_via text;

UPDATE services s SET exposed_via = e.via
FROM service_exposure e
WHERE e.organisation_id = s.organisation_id AND e.service_id = s.id;

-- The filter exposed=true pages over the (few) exposed services in page order. A service row that
-- is not exposed never enters it: the services' inserts pay nothing for it.
CREATE INDEX services_exposed_page_idx ON services (organisation_id, seq) WHERE exposed_via IS NOT NULL;
