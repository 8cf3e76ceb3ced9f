-- Issue 23: a member's last sign-in is recorded at sign-in, per organisation. It was read from
-- the newest session, which sign-out, expiry and a password change delete: a member who had
-- signed out showed "never". Filled from the audit trail's `auth.login` rows.
ALTER TABLE memberships ADD COLUMN last_sign_in_at timestamptz;

UPDATE memberships m SET last_sign_in_at = l.at
FROM (
  SELECT organisation_id, target_id AS user_id, max(occurred_at) AS at
  FROM audit_log WHERE action = 'auth.login' AND target_type = 'user'
  GROUP BY organisation_id, target_id
) l
WHERE l.organisation_id = m.organisation_id AND l.user_id = m.user_id::text;
