-- A digest of what a built topology view shows (issue 30): the hourly rebuild of an unchanged view
-- writes no change row (GET /api/sse readers reload a view on one). Cleared when the view goes
-- stale or fails, so the next build that makes it ready again is announced.
ALTER TABLE topologies ADD COLUMN content_digest text;
