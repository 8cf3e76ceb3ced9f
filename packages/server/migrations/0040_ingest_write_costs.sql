-- Observation ingest (issue 30): two per-row costs of a sweep.

-- 1. Numbering change rows and events. The row trigger of migration 0013 ran a PL/pgSQL function
-- for every row, which looked its organisation's counter up by name each time: a first /16 sweep
-- writes 700,000 change rows. Set-based writers now take the numbers themselves in their insert
-- (`nextval` of the counter resolved once per statement: events/changes.ts, events/emit.ts), and
-- the trigger only numbers rows that arrive without one. The WHEN condition is evaluated without
-- calling the function, so a numbered row costs nothing more. Numbers still come from the same
-- counters, so they stay monotonic per organisation either way.
DROP TRIGGER change_log_number ON change_log;
DROP TRIGGER events_number ON events;
CREATE TRIGGER change_log_number BEFORE INSERT ON change_log FOR EACH ROW WHEN (NEW.id IS NULL) EXECUTE FUNCTION number_row();
CREATE TRIGGER events_number BEFORE INSERT ON events FOR EACH ROW WHEN (NEW.seq IS NULL) EXECUTE FUNCTION number_row();

-- 2. Room for the last-seen refresh. A rescan finds the same hosts, addresses and services and
-- moves only their last-seen times (spec: `lastSeenAt`; a completed session marks absent what it
-- did not see since it started). No index holds those columns, so the update can be a HOT update
-- (no index touched: services have eight, hosts ten) when the row's page has room for the new
-- version; with pages filled to the brim by the first sweep, every refresh was a full new row in
-- every index, as costly as the first insert. Half of each page is left free: one batch refreshes
-- every row of its pages once, and the versions a previous rescan left are pruned to make room for
-- the next. Applies to pages written from now on (no table is rewritten here).
ALTER TABLE services SET (fillfactor = 50);
ALTER TABLE hosts SET (fillfactor = 50);
ALTER TABLE host_addresses SET (fillfactor = 50);

-- 3. Ids in time order for the rows a sweep creates by the hundred thousand. A random UUID puts
-- every new host and service at a random place of each index that leads with it (hosts_pkey;
-- services_pkey; and, through host_id, services_port_key, services_host_idx, host_addresses_pkey),
-- so a large sweep touches a different index page for every row, and once those indexes outgrow
-- the buffer cache each insert waits on a read. A UUID whose first 48 bits are the creation time
-- in milliseconds (the layout of UUID version 7, RFC 9562) puts a batch's rows side by side at the
-- end of those indexes. It is still a UUID: clients see no difference, existing ids stay.
CREATE FUNCTION time_ordered_uuid() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT encode(set_byte(overlay(uuid_send(gen_random_uuid()) PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
    6, 112 | floor(random() * 16)::int), 'hex')::uuid
$$;
ALTER TABLE hosts ALTER COLUMN id SET DEFAULT time_ordered_uuid();
ALTER TABLE services ALTER COLUMN id SET DEFAULT time_ordered_uuid();
