-- Issue 23: the networks list names the daemon and links the session the scheduler last queued.
-- Kept as ids next to the scheduler's outcome (no foreign keys: the session may be deleted with
-- its network, the daemon removed; the console shows what is left).

ALTER TABLE networks ADD COLUMN schedule_session_id uuid;
ALTER TABLE networks ADD COLUMN schedule_daemon_id uuid;
