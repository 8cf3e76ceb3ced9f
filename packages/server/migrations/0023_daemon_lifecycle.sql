-- Issue 23: a daemon can be disabled (no scans handed to it, never alerted as silent) and removed
-- (its key revoked). A removed daemon stays as a row so its past sessions keep their history (and
-- the name of who ran them); it is left out of every list and of registration by name, so a new
-- daemon may take the name again.

ALTER TABLE daemons ADD COLUMN disabled_at timestamptz;
ALTER TABLE daemons ADD COLUMN removed_at timestamptz;

DROP INDEX daemons_name_key;
CREATE UNIQUE INDEX daemons_name_key ON daemons (organisation_id, lower(name)) WHERE removed_at IS NULL;
