-- Stored snapshot diffs (issue 29). GET /api/v1/snapshots/{id}/diff walked both snapshots'
-- contents from their first byte for every page (page N cost a whole walk, 16 s at a million
-- hosts). A snapshot's content never changes, so the diff of a pair is computed once, by the first
-- request, and stored in one transaction: its counts here, its changes in snapshot_diff_changes,
-- which every page reads by keyset on (section, entity_id), the order the cursor names.
-- Pruned with the snapshots (cascade) and a day after they were computed (the hourly
-- inventory.snapshot job and every new diff); a page of a pruned diff computes it again, the same.
CREATE TABLE snapshot_diffs (
  organisation_id  uuid NOT NULL,
  snapshot_id      uuid NOT NULL,
  against_id       uuid NOT NULL,
  counts           jsonb NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, snapshot_id, against_id),
  FOREIGN KEY (organisation_id, snapshot_id) REFERENCES snapshots (organisation_id, id) ON DELETE CASCADE,
  FOREIGN KEY (organisation_id, against_id) REFERENCES snapshots (organisation_id, id) ON DELETE CASCADE
);
CREATE INDEX snapshot_diffs_created_idx ON snapshot_diffs (organisation_id, created_at);

-- One change of a stored diff. section: the index of the section in the diff's order (0 hosts,
-- 1 services, 2 certificates, 3 vulnerabilities); before and after: the entity's JSON text as the
-- snapshot's content holds it (null on the side it is missing from), kept as text so its key order
-- is the content's; fields: the JSON array of changed fields (null unless kind = 'changed').
CREATE TABLE snapshot_diff_changes (
  organisation_id  uuid NOT NULL,
  snapshot_id      uuid NOT NULL,
  against_id       uuid NOT NULL,
  section          smallint NOT NULL CHECK (section BETWEEN 0 AND 3),
  entity_id        uuid NOT NULL,
  kind             text NOT NULL CHECK (kind IN ('added', 'removed', 'changed')),
  before           text,
  after            text,
  fields           text,
  PRIMARY KEY (organisation_id, snapshot_id, against_id, section, entity_id),
  FOREIGN KEY (organisation_id, snapshot_id, against_id) REFERENCES snapshot_diffs (organisation_id, snapshot_id, against_id) ON DELETE CASCADE
);
-- The pages of one kind (?kind=): a keyset read that skips no change of another kind.
CREATE INDEX snapshot_diff_changes_kind_idx ON snapshot_diff_changes (organisation_id, snapshot_id, against_id, kind, section, entity_id);
