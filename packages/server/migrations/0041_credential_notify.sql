-- Issue 30: web processes keep verified API keys for a few seconds (auth/credential-cache.ts), so
-- a busy key's page reads skip one of their two round trips. Whatever revokes, re-scopes, expires
-- or deletes a key, changes or removes the membership behind it, or disables or deletes its user,
-- in any process or tool, announces it here, and every web process drops what it keeps at once.
-- Statement triggers: one notification per statement, whatever the rows; `UPDATE OF` lists only
-- the columns that decide a credential, so the once-a-minute last-used writes announce nothing.
CREATE FUNCTION notify_credentials() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('surveyor_credentials', '');
  RETURN NULL;
END;
$$;

CREATE TRIGGER keys_credentials_notify
  AFTER UPDATE OF revoked_at, expires_at, scopes, kind, user_id, organisation_id, token_hash OR DELETE ON keys
  FOR EACH STATEMENT EXECUTE FUNCTION notify_credentials();
CREATE TRIGGER memberships_credentials_notify
  AFTER UPDATE OF role, deactivated_at, user_id, organisation_id OR DELETE ON memberships
  FOR EACH STATEMENT EXECUTE FUNCTION notify_credentials();
CREATE TRIGGER users_credentials_notify
  AFTER UPDATE OF disabled_at OR DELETE ON users
  FOR EACH STATEMENT EXECUTE FUNCTION notify_credentials();
