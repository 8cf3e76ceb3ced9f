-- A killed job tick is visible (issue 18): a run is recorded when it starts, not only when it
-- ends. `started_at` is set when a run starts and cleared when it records its end; a row with a
-- start is a run in progress while the job's advisory lock is held, else an interrupted run
-- (its process died). A job that has started but never finished has no last run yet.
ALTER TABLE job_status
  ADD COLUMN started_at timestamptz,
  ALTER COLUMN last_run_at DROP NOT NULL,
  ALTER COLUMN duration_ms DROP NOT NULL,
  ALTER COLUMN outcome DROP NOT NULL,
  ALTER COLUMN attempts DROP NOT NULL;

-- The change stream follows jobs too: entity `job`, its id the job's name (not a uuid), actions
-- `started`, `finished` and `failed`.
ALTER TABLE change_log ALTER COLUMN entity_id TYPE text;
ALTER TABLE change_log DROP CONSTRAINT change_log_action_check;
ALTER TABLE change_log ADD CONSTRAINT change_log_action_check CHECK (action IN ('created', 'updated', 'deleted', 'started', 'finished', 'failed'));
