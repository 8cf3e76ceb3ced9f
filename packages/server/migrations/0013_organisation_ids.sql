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

CREATE FUNCTION create_organisation_counters() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE SEQUENCE IF NOT EXISTS %I', organisation_counter('changes', NEW.id));
  EXECUTE format('CREATE SEQUENCE IF NOT EXISTS %I', organisation_counter('events', NEW.id));
  RETURN NULL;
END $$;
CREATE TRIGGER organisations_counters AFTER INSERT ON organisations FOR EACH ROW EXECUTE FUNCTION create_organisation_counters();

CREATE FUNCTION drop_organisation_counters() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DROP SEQUENCE IF EXISTS %I', organisation_counter('changes', OLD.id));
  EXECUTE format('DROP SEQUENCE IF EXISTS %I', organisation_counter('events', OLD.id));
  RETURN NULL;
END $$;
CREATE TRIGGER organisations_counters_drop AFTER DELETE ON organisations FOR EACH ROW EXECUTE FUNCTION drop_organisation_counters();

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
CREATE FUNCTION number_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.id := nextval(organisation_counter('changes', NEW.organisation_id)::regclass);
  RETURN NEW;
END $$;
CREATE TRIGGER change_log_number BEFORE INSERT ON change_log FOR EACH ROW EXECUTE FUNCTION number_change();

ALTER TABLE events ALTER COLUMN seq DROP IDENTITY;
CREATE FUNCTION number_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.seq := nextval(organisation_counter('events', NEW.organisation_id)::regclass);
  RETURN NEW;
END $$;
CREATE TRIGGER events_number BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION number_event();
