-- Alerts and the live change stream (issue 6; spec 6, decisions.md "Events and alerts").

-- An event's subject is not always a row with a uuid: `job.failed` names a job.
ALTER TABLE events ALTER COLUMN subject_id TYPE text;

-- daemon.offline: set when an online daemon has been quiet for more than 300 s, cleared (with
-- daemon.online) by its next heartbeat. One quiet episode, one event.
ALTER TABLE daemons ADD COLUMN offline_since timestamptz;

-- tls.expiring: the smallest threshold (30, 14, 7, 1, 0 days) already announced for this
-- certificate; the hourly job announces a crossing only below it, so each threshold once.
ALTER TABLE certificates ADD COLUMN expiry_notified_days integer CHECK (expiry_notified_days IN (30, 14, 7, 1, 0));

-- Where alerts go. The connection settings (URLs, signing secret, SMTP password) are one JSON
-- document sealed with AES-256-GCM under SERVICE_SECRET_KEY; `target` is a redacted summary to show.
CREATE TABLE notification_destinations (
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  id               uuid NOT NULL DEFAULT gen_random_uuid(),
  name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  kind             text NOT NULL CHECK (kind IN ('webhook', 'slack', 'email')),
  enabled          boolean NOT NULL DEFAULT true,
  event_kinds      text[] NOT NULL,
  min_severity     text NOT NULL CHECK (min_severity IN ('info', 'warning', 'critical')),
  target           text NOT NULL,
  config_sealed    text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, id)
);
CREATE UNIQUE INDEX notification_destinations_name_key ON notification_destinations (organisation_id, lower(name));

-- One row per (event, destination): the unique key is what makes an alert go out at most once
-- per destination. `claimed_until` is the lease of the worker sending it (taken under a row lock).
CREATE TABLE notification_deliveries (
  organisation_id  uuid NOT NULL,
  id               uuid NOT NULL DEFAULT gen_random_uuid(),
  event_id         uuid NOT NULL,
  destination_id   uuid NOT NULL,
  state            text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'dead')),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  claimed_until    timestamptz,
  last_status      integer,
  last_error       text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  delivered_at     timestamptz,
  PRIMARY KEY (organisation_id, id),
  UNIQUE (organisation_id, event_id, destination_id),
  FOREIGN KEY (organisation_id, event_id) REFERENCES events (organisation_id, id) ON DELETE CASCADE,
  FOREIGN KEY (organisation_id, destination_id) REFERENCES notification_destinations (organisation_id, id) ON DELETE CASCADE
);
CREATE INDEX notification_deliveries_due_idx ON notification_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX notification_deliveries_recent_idx ON notification_deliveries (organisation_id, created_at);

CREATE TABLE notification_attempts (
  organisation_id  uuid NOT NULL,
  delivery_id      uuid NOT NULL,
  attempt          integer NOT NULL,
  attempted_at     timestamptz NOT NULL,
  duration_ms      integer NOT NULL,
  status_code      integer,
  error            text,
  PRIMARY KEY (organisation_id, delivery_id, attempt),
  FOREIGN KEY (organisation_id, delivery_id) REFERENCES notification_deliveries (organisation_id, id) ON DELETE CASCADE
);

-- Routing, in the transaction that writes the events: every enabled destination of the
-- organisation that takes the event's kind at or above its minimum severity gets a delivery.
CREATE FUNCTION route_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO notification_deliveries (organisation_id, event_id, destination_id)
  SELECT e.organisation_id, e.id, d.id
  FROM new_events e
  JOIN notification_destinations d ON d.organisation_id = e.organisation_id AND d.enabled AND e.kind = ANY (d.event_kinds)
  WHERE array_position(ARRAY['info', 'warning', 'critical'], e.severity) >= array_position(ARRAY['info', 'warning', 'critical'], d.min_severity);
  RETURN NULL;
END $$;
CREATE TRIGGER events_route AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION route_events();

-- vulnerability.opened (critical or high): when such a finding is created, or moves back to open.
-- A trigger, so that every writer of findings (the advisory matcher included) announces them.
CREATE FUNCTION announce_new_vulnerabilities() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events (organisation_id, kind, severity, subject_type, subject_id, data)
  SELECT v.organisation_id, 'vulnerability.opened', CASE v.severity WHEN 'critical' THEN 'critical' ELSE 'warning' END,
         'vulnerability', v.id::text,
         jsonb_build_object('cveId', v.cve_id, 'severity', v.severity, 'cvss', v.cvss, 'title', v.title, 'hostId', v.host_id, 'serviceId', v.service_id)
  FROM new_rows v
  WHERE v.state = 'open' AND v.severity IN ('critical', 'high');
  RETURN NULL;
END $$;
CREATE FUNCTION announce_reopened_vulnerabilities() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events (organisation_id, kind, severity, subject_type, subject_id, data)
  SELECT v.organisation_id, 'vulnerability.opened', CASE v.severity WHEN 'critical' THEN 'critical' ELSE 'warning' END,
         'vulnerability', v.id::text,
         jsonb_build_object('cveId', v.cve_id, 'severity', v.severity, 'cvss', v.cvss, 'title', v.title, 'hostId', v.host_id, 'serviceId', v.service_id, 'reopened', true)
  FROM new_rows v JOIN old_rows o ON o.organisation_id = v.organisation_id AND o.id = v.id
  WHERE v.state = 'open' AND o.state <> 'open' AND v.severity IN ('critical', 'high');
  RETURN NULL;
END $$;
CREATE TRIGGER vulnerabilities_opened_insert AFTER INSERT ON vulnerabilities REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_new_vulnerabilities();
CREATE TRIGGER vulnerabilities_opened_update AFTER UPDATE ON vulnerabilities REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION announce_reopened_vulnerabilities();

-- The live change stream (GET /api/sse): every statement that appends to the change log
-- notifies, at commit, `<organisation> <first id> <last id>` per organisation it touched; each
-- web process listens and reads those rows for its streams.
CREATE FUNCTION notify_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  FOR r IN SELECT organisation_id, min(id) AS lo, max(id) AS hi FROM new_changes GROUP BY organisation_id LOOP
    PERFORM pg_notify('surveyor_changes', r.organisation_id || ' ' || r.lo || ' ' || r.hi);
  END LOOP;
  RETURN NULL;
END $$;
CREATE TRIGGER change_log_notify AFTER INSERT ON change_log REFERENCING NEW TABLE AS new_changes
  FOR EACH STATEMENT EXECUTE FUNCTION notify_changes();
