-- Snapshot diffs (issue 15) read a snapshot's content in slices (substring over the bytea). The
-- content is gzip already: TOAST's own compression gains nothing on it and would make every slice
-- decompress the value from its start. EXTERNAL keeps it out of line and uncompressed, so a slice
-- reads only its own TOAST chunks. Applies to contents stored from now on.
ALTER TABLE snapshots ALTER COLUMN content SET STORAGE EXTERNAL;
