-- SCIM 2.0 provisioning (issue 26). A member the identity provider manages has a scim_users row
-- holding the resource as the provider last wrote it (minus id, meta, groups and password); the
-- login identity stays in users, the role in memberships. Deactivation is per organisation (a
-- person may be a member of several), so it lives on the membership: sessions and keys read it on
-- every request (spec 5 rule 5).
ALTER TABLE memberships ADD COLUMN deactivated_at timestamptz;

CREATE TABLE scim_users (
  organisation_id  uuid NOT NULL,
  user_id          uuid NOT NULL,
  user_name        text NOT NULL CHECK (length(user_name) BETWEEN 1 AND 320),
  external_id      text CHECK (length(external_id) <= 512),
  resource         jsonb NOT NULL,
  version          integer NOT NULL DEFAULT 1,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, user_id),
  FOREIGN KEY (organisation_id, user_id) REFERENCES memberships (organisation_id, user_id) ON DELETE CASCADE
);
-- userName is unique within the organisation, case-insensitively (RFC 7643 4.1.1: caseExact false).
CREATE UNIQUE INDEX scim_users_user_name_key ON scim_users (organisation_id, lower(user_name));
CREATE INDEX scim_users_external_id_idx ON scim_users (organisation_id, external_id);

CREATE TABLE scim_groups (
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  id               uuid NOT NULL DEFAULT gen_random_uuid(),
  display_name     text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 256),
  external_id      text CHECK (length(external_id) <= 512),
  version          integer NOT NULL DEFAULT 1,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, id)
);
CREATE UNIQUE INDEX scim_groups_display_name_key ON scim_groups (organisation_id, lower(display_name));

CREATE TABLE scim_group_members (
  organisation_id  uuid NOT NULL,
  group_id         uuid NOT NULL,
  user_id          uuid NOT NULL,
  PRIMARY KEY (organisation_id, group_id, user_id),
  FOREIGN KEY (organisation_id, group_id) REFERENCES scim_groups (organisation_id, id) ON DELETE CASCADE,
  FOREIGN KEY (organisation_id, user_id) REFERENCES memberships (organisation_id, user_id) ON DELETE CASCADE
);
CREATE INDEX scim_group_members_user_idx ON scim_group_members (organisation_id, user_id);

-- The owner's mapping from a group (display name, lower-cased, or id) to the role it grants.
CREATE TABLE scim_role_mappings (
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  group_key        text NOT NULL CHECK (group_key = lower(group_key) AND length(group_key) BETWEEN 1 AND 256),
  group_name       text NOT NULL CHECK (length(group_name) BETWEEN 1 AND 256), -- as the owner typed it
  role             text NOT NULL CHECK (role IN ('viewer', 'editor', 'admin')),
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, group_key)
);
