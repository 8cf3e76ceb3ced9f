-- Retention of the change log, events and alert deliveries (issue 30): job events.prune deletes
-- what is older than each window (SERVICE_CHANGE_LOG_RETENTION_DAYS, SERVICE_EVENTS_RETENTION_DAYS,
-- SERVICE_DELIVERIES_RETENTION_DAYS) in bounded batches.

-- The largest change-log id pruned per organisation: a stream resuming with a Last-Event-ID below
-- it missed changes that are no longer kept, and is told to reload (`event: reset`). Without it a
-- resume after pruned rows would replay what is left and silently skip the rest.
CREATE TABLE change_log_pruned (
  organisation_id  uuid PRIMARY KEY REFERENCES organisations (id) ON DELETE CASCADE,
  through_id       bigint NOT NULL,
  pruned_at        timestamptz NOT NULL DEFAULT now()
);

-- The prune's own reads (deployment-wide, by age); the change log is pruned per organisation
-- through change_log_time_idx (organisation_id, at), so its inserts pay no new index.
CREATE INDEX events_occurred_idx ON events (occurred_at);
CREATE INDEX notification_deliveries_done_idx ON notification_deliveries (updated_at) WHERE state <> 'pending';
