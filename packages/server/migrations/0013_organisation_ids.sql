-- Event ids per organisation (issue 18): the live change stream's `id` (change_log.id) and the
-- events' `seq` came from one counter shared by every organisation, so an organisation's ids
-- jumped by the number of changes all others made in between. Each organisation now has its own
-- two counters (sequences: no lock, so concurrent writers never wait on each other), and a row
-- takes its number from its organisation's counter as it is inserted. Numbers stay monotonic per
-- organisation, and the existing rows keep theirs: each counter starts after its organisation's
-- largest, so a Last-Event-ID from before this migration resumes as before.

-- The counter of an organisation: `org_changes_<hex of its id>` or `org_events_<hex of its id>`,
-- in the schema of the tables.
CREATE FUNCTION organisation_counter(kind text, organisation uuid) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT 'org_' || kind || '_' || replace(organisation::text, '-', '')
$$;

-- Made with the organisation, dropped with it.
CREATE FUNCTION organisation_counters() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  verb text := 'CREATE SEQUENCE IF NOT EXISTS %I';
  org uuid;
BEGIN
  IF TG_OP = 'INSERT' THEN
    org := NEW.id;
  ELSE
    verb := 'DROP SEQUENCE IF EXISTS %I';
    org := OLD.id;
  END IF;
  EXECUTE format(verb, organisation_counter('changes', org));
  EXECUTE format(verb, organisation_counter('events', org));
  RETURN NULL;
END $$;
CREATE TRIGGER organisations_counters AFTER INSERT OR DELETE ON organisations FOR EACH ROW EXECUTE FUNCTION organisation_counters();

-- Counters of the existing organisations, after their largest number.
DO $$
DECLARE o record;
BEGIN
  FOR o IN SELECT id FROM organisations LOOP
    EXECUTE format('CREATE SEQUENCE %I START %s', organisation_counter('changes', o.id), coalesce((SELECT max(id) FROM change_log WHERE organisation_id = o.id), 0) + 1);
    EXECUTE format('CREATE SEQUENCE %I START %s', organisation_counter('events', o.id), coalesce((SELECT max(seq) FROM events WHERE organisation_id = o.id), 0) + 1);
  END LOOP;
END $$;

-- The numbers: set as each row goes in (one nextval; the counter's name is built from the row's
-- organisation, no table is read).
ALTER TABLE change_log ALTER COLUMN id DROP IDENTITY;
ALTER TABLE events ALTER COLUMN seq DROP IDENTITY;
CREATE FUNCTION number_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'change_log' THEN
    NEW.id := nextval(organisation_counter('changes', NEW.organisation_id)::regclass);
  ELSE
    NEW.seq := nextval(organisation_counter('events', NEW.organisation_id)::regclass);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER change_log_number BEFORE INSERT ON change_log FOR EACH ROW EXECUTE FUNCTION number_row();
CREATE TRIGGER events_number BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION number_row();
