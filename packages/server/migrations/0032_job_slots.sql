-- The schedule's slots (spec 1.1: "only one process executes a given tick"). Every process ticks a
-- job at the same boundaries of its interval on the wall clock; the tick that moves a job's row to
-- the current slot runs it, and any other process's tick for that slot is skipped. The job's lock
-- alone kept two ticks from overlapping, not two workers from running the same interval twice.
-- Deployment-wide (no organisation): one row per job and interval. The interval is part of the key:
-- a slot number means something only for its interval, so a process on a compressed schedule
-- (SERVICE_JOBS_TIME_SCALE) keeps its own slots instead of claiming numbers a normal one would
-- never reach again.
CREATE TABLE job_slots (
  job          text NOT NULL,
  interval_ms  bigint NOT NULL,
  slot         bigint NOT NULL,
  claimed_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job, interval_ms)
);
