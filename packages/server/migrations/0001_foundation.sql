-- Foundation: organisations, users, memberships, keys, sessions, audit log.
--
-- Identity tables (organisations, users, memberships, keys, sessions) are small and read across
-- tenants by credential lookup; under a distributed deployment they are reference tables.
-- Every tenant data table (audit_log here, the inventory later) leads its primary key and its
-- indexes with organisation_id, so it can be distributed by organisation.

CREATE TABLE organisations (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX organisations_name_key ON organisations (lower(name));

CREATE TABLE users (
  id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  email                 text NOT NULL CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 320),
  password_hash         text,
  must_change_password  boolean NOT NULL DEFAULT false,
  created_at            timestamptz NOT NULL DEFAULT now(),
  disabled_at           timestamptz
);
CREATE UNIQUE INDEX users_email_key ON users (email);

CREATE TABLE memberships (
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  user_id          uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role             text NOT NULL CHECK (role IN ('viewer', 'editor', 'admin', 'owner')),
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, user_id)
);
CREATE INDEX memberships_user_idx ON memberships (user_id);

-- API, metrics and SCIM keys belong to a membership, whose current role caps their scopes;
-- daemon keys belong to the organisation alone. Only the SHA-256 of a token is stored.
CREATE TABLE keys (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  kind             text NOT NULL CHECK (kind IN ('api', 'daemon', 'metrics', 'scim')),
  name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  token_hash       text NOT NULL CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  token_prefix     text NOT NULL,
  scopes           text[] NOT NULL DEFAULT '{}',
  user_id          uuid,
  created_at       timestamptz NOT NULL DEFAULT now(),
  last_used_at     timestamptz,
  expires_at       timestamptz,
  revoked_at       timestamptz,
  FOREIGN KEY (organisation_id, user_id) REFERENCES memberships (organisation_id, user_id) ON DELETE CASCADE,
  CHECK ((kind = 'daemon') = (user_id IS NULL))
);
CREATE UNIQUE INDEX keys_token_hash_key ON keys (token_hash);
CREATE INDEX keys_organisation_idx ON keys (organisation_id, kind, created_at);

CREATE TABLE sessions (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  token_hash       text NOT NULL CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  csrf_token       text NOT NULL,
  user_id          uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  created_at       timestamptz NOT NULL DEFAULT now(),
  last_seen_at     timestamptz NOT NULL DEFAULT now(),
  expires_at       timestamptz NOT NULL
);
CREATE UNIQUE INDEX sessions_token_hash_key ON sessions (token_hash);
CREATE INDEX sessions_user_idx ON sessions (user_id);

-- Append-only. Actor ids are kept without foreign keys so history outlives the key or user.
CREATE TABLE audit_log (
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  id               uuid NOT NULL DEFAULT gen_random_uuid(),
  occurred_at      timestamptz NOT NULL DEFAULT now(),
  actor_type       text NOT NULL CHECK (actor_type IN ('key', 'session', 'cli', 'system')),
  actor_key_id     uuid,
  actor_user_id    uuid,
  action           text NOT NULL,
  target_type      text NOT NULL,
  target_id        text,
  changes          jsonb NOT NULL DEFAULT '{}',
  request_id       text,
  PRIMARY KEY (organisation_id, id)
);
CREATE INDEX audit_log_time_idx ON audit_log (organisation_id, occurred_at DESC, id);
