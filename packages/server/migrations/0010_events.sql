-- Events (spec 6, decisions.md "Events and alerts"): rows written in the same transaction as the
-- change that caused them; notification delivery and routing read them (issue 6).
CREATE TABLE events (
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  id               uuid NOT NULL DEFAULT gen_random_uuid(),
  seq              bigint GENERATED ALWAYS AS IDENTITY,
  kind             text NOT NULL,
  severity         text NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
  occurred_at      timestamptz NOT NULL DEFAULT now(),
  subject_type     text NOT NULL,
  subject_id       uuid NOT NULL,
  data             jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (organisation_id, id)
);
CREATE INDEX events_seq_idx ON events (organisation_id, seq);
CREATE INDEX events_subject_idx ON events (organisation_id, subject_type, subject_id, kind);
