import type { ColumnType, Generated } from 'kysely';

/** Timestamps come back as Date from both drivers; writes take Date or an SQL expression. */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface OrganisationsTable {
  id: Generated<string>;
  name: string;
  created_at: Timestamp;
}

export interface UsersTable {
  id: Generated<string>;
  email: string;
  password_hash: string | null;
  must_change_password: Generated<boolean>;
  created_at: Timestamp;
  disabled_at: NullableTimestamp;
}

export interface MembershipsTable {
  organisation_id: string;
  user_id: string;
  role: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type KeyKind = 'api' | 'daemon' | 'metrics' | 'scim';

export interface KeysTable {
  id: Generated<string>;
  organisation_id: string;
  kind: KeyKind;
  name: string;
  token_hash: string;
  token_prefix: string;
  scopes: ColumnType<string[], string[] | undefined, string[]>;
  user_id: string | null;
  created_at: Timestamp;
  last_used_at: NullableTimestamp;
  expires_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
}

export interface SessionsTable {
  id: Generated<string>;
  token_hash: string;
  csrf_token: string;
  user_id: string;
  organisation_id: string;
  created_at: Timestamp;
  last_seen_at: Timestamp;
  expires_at: Timestamp;
}

export interface AuditLogTable {
  organisation_id: string;
  id: Generated<string>;
  occurred_at: Timestamp;
  actor_type: 'key' | 'session' | 'cli' | 'system';
  actor_key_id: string | null;
  actor_user_id: string | null;
  action: string;
  target_type: string;
  target_id: string | null;
  changes: ColumnType<Record<string, unknown>, string | undefined, string>;
  request_id: string | null;
}

export interface SchemaMigrationsTable {
  version: number;
  name: string;
  checksum: string;
  applied_at: Timestamp;
}

export interface DB {
  organisations: OrganisationsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  keys: KeysTable;
  sessions: SessionsTable;
  audit_log: AuditLogTable;
  schema_migrations: SchemaMigrationsTable;
}
