-- Digests of the observation batches each session has applied: an identical batch delivered
-- again (a daemon retrying after a lost answer) is answered at once, as all dedupHits, without
-- touching the inventory. Deleted with the session.
CREATE TABLE scan_batches (
  organisation_id  uuid NOT NULL,
  session_id       uuid NOT NULL,
  digest           text NOT NULL,
  rows             integer NOT NULL,
  received_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, session_id, digest),
  FOREIGN KEY (organisation_id, session_id) REFERENCES scan_sessions (organisation_id, id) ON DELETE CASCADE
);
