-- Issue #16: a degraded daemon says why in its heartbeat (`reason`, at most 500 characters). Kept
-- while the daemon is degraded, cleared by its next `online` heartbeat.

ALTER TABLE daemons ADD COLUMN status_reason text;
