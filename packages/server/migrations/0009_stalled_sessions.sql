-- A stalled session no longer blocks a new scan of its network (decisions.md: only a queued or
-- running session does): a new scan supersedes it, marking it failed. Otherwise a daemon that
-- died mid-scan would keep its network from ever being scanned again on schedule.
DROP INDEX scan_sessions_active_key;
CREATE UNIQUE INDEX scan_sessions_active_key ON scan_sessions (organisation_id, network_id) WHERE state IN ('queued', 'dispatched', 'running');
