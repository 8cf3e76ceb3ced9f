-- Issue 30: the certificates page is one index range scan, as the hosts page is (0038). A
-- certificate's state (view certificate_states, 0024: current, replaced, gone) depends on the other
-- certificates of its endpoint and on the services of its host; the list, its default filter
-- (current only), the overview's expiry counts and tls.expiring evaluated the view row by row (its
-- count for every certificate of the organisation). It is now stored on the certificate, written
-- by the writers of those rows in their transactions (inventory/host-summaries.ts, with the host
-- page's columns: reconciliation of daemon batches and cloud syncs, a completed scan's absence
-- marking, host merges). The view stays the definition that computes it.
-- A constant default: adding the column rewrites nothing; the backfill writes only the others.
ALTER TABLE certificates
  ADD COLUMN state text NOT NULL DEFAULT 'current' CHECK (state IN ('current', 'replaced', 'gone'));

UPDATE certificates c SET state = v.state
FROM certificate_states v
WHERE v.organisation_id = c.organisation_id AND v.id = c.id AND v.state <> 'current';

-- The filter current=true (the console's default) and current=false, each its own page order.
CREATE INDEX certificates_current_page_idx ON certificates (organisation_id, seq) WHERE state = 'current';
CREATE INDEX certificates_past_page_idx ON certificates (organisation_id, seq) WHERE state <> 'current';
