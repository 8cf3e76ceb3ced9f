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

type Seq = Generated<number>;
type Created = ColumnType<Date, Date | string | undefined, never>;
type TextArray = ColumnType<string[], string[] | undefined, string[]>;

export interface SitesTable {
  organisation_id: string;
  id: Generated<string>;
  seq: Seq;
  code: string;
  name: string;
  description: string | null;
  created_at: Created;
  updated_at: Timestamp;
}

export interface NetworksTable {
  organisation_id: string;
  id: Generated<string>;
  seq: Seq;
  site_id: string | null;
  name: string;
  cidr: string;
  exclude_cidrs: TextArray;
  scan_interval_minutes: number | null;
  top_ports_tcp: Generated<number>;
  top_ports_udp: Generated<number>;
  nmap_enabled: Generated<boolean>;
  nmap_scripts: TextArray;
  last_scan_at: NullableTimestamp;
  schedule_checked_at: ColumnType<string | null, never, never>;
  schedule_outcome: ColumnType<string | null, never, never>;
  schedule_detail: ColumnType<string | null, never, never>;
  created_at: Created;
  updated_at: Timestamp;
}

export interface HostsTable {
  organisation_id: string;
  id: Generated<string>;
  seq: Seq;
  site_id: string | null;
  fingerprint: string;
  hostname: string | null;
  fqdn: string | null;
  vendor: string | null;
  os: string | null;
  device_type: string | null;
  parent_host_id: string | null;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  created_at: Created;
  updated_at: Timestamp;
}

export interface HostAddressesTable {
  organisation_id: string;
  host_id: string;
  address: string;
  mac: string | null;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
}

export interface HostInterfacesTable {
  organisation_id: string;
  host_id: string;
  name: string;
  mac: string | null;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
}

export interface ServicesTable {
  organisation_id: string;
  id: Generated<string>;
  seq: Seq;
  host_id: string;
  address: string | null;
  protocol: string;
  port: number;
  state: Generated<string>;
  banner: string | null;
  name: string | null;
  product: string | null;
  vendor: string | null;
  version: string | null;
  cpe: string | null;
  signature_id: string | null;
  signature_source: string | null;
  confidence: number | null;
  evidence: string | null;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  gone_at: NullableTimestamp;
  created_at: Created;
  updated_at: Timestamp;
}

export interface CertificatesTable {
  organisation_id: string;
  id: Generated<string>;
  seq: Seq;
  host_id: string;
  address: string | null;
  port: number | null;
  subject: string;
  issuer: string;
  not_before: Timestamp;
  not_after: Timestamp;
  sha256: string;
  chain_pem: TextArray;
  trust_status: string;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  created_at: Created;
  updated_at: Timestamp;
}

export interface VulnerabilitiesTable {
  organisation_id: string;
  id: Generated<string>;
  seq: Seq;
  service_id: string;
  host_id: string;
  cve_id: string;
  title: string | null;
  severity: string;
  /** numeric(3,1): read as text by both drivers. */
  cvss: ColumnType<string | null, number | string | null | undefined, number | string | null>;
  state: Generated<string>;
  note: string | null;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  state_changed_at: Timestamp;
  resolved_at: NullableTimestamp;
  created_at: Created;
  updated_at: Timestamp;
}

export interface SnapshotsTable {
  organisation_id: string;
  id: Generated<string>;
  seq: Seq;
  site_id: string | null;
  reason: string;
  stats: ColumnType<Record<string, number>, string, string>;
  captured_at: Timestamp;
  capture_day: ColumnType<Date, string | undefined, never>;
  created_by_key_id: string | null;
  created_at: Created;
  content: ColumnType<Buffer | null, Buffer | null | undefined, never>;
  content_sha256: ColumnType<string | null, string | null | undefined, never>;
  content_bytes: ColumnType<number | null, number | null | undefined, never>;
}

export interface TopologiesTable {
  organisation_id: string;
  id: Generated<string>;
  seq: Seq;
  site_id: string | null;
  kind: string;
  status: Generated<string>;
  name: string;
  node_count: Generated<number>;
  edge_count: Generated<number>;
  built_at: NullableTimestamp;
  created_at: Created;
  updated_at: Timestamp;
}

export interface DaemonsTable {
  organisation_id: string;
  id: Generated<string>;
  seq: Seq;
  key_id: string;
  name: string;
  version: string;
  os: string;
  arch: string;
  capabilities: ColumnType<Record<string, boolean>, string, string>;
  network_cidrs: TextArray;
  metadata: ColumnType<Record<string, unknown>, string, string>;
  boot_id: string | null;
  restart_count: Generated<number>;
  offline_since: NullableTimestamp;
  site_id: string | null;
  site_set_in_ui: Generated<boolean>;
  status: Generated<string>;
  loaded_signatures: ColumnType<Record<string, number>, string | undefined, string>;
  flows_dropped: Generated<number>;
  heartbeat_interval_seconds: Generated<number>;
  last_heartbeat_at: NullableTimestamp;
  last_seen_at: NullableTimestamp;
  registered_at: Created;
  created_at: Created;
  updated_at: Timestamp;
}

export interface ScanSessionsTable {
  organisation_id: string;
  id: Generated<string>;
  seq: Seq;
  network_id: string;
  daemon_id: string;
  state: Generated<string>;
  requested_by_key_id: string | null;
  cidr: string;
  exclude_cidrs: TextArray;
  top_ports_tcp: number;
  top_ports_udp: number;
  nmap_enabled: Generated<boolean>;
  nmap_scripts: TextArray;
  hosts_total: number | null;
  hosts_scanned: Generated<number>;
  ports_scanned: Generated<number>;
  duration_ms: number | null;
  batches: Generated<number>;
  created_at: Created;
  dispatched_at: NullableTimestamp;
  started_at: NullableTimestamp;
  last_batch_at: NullableTimestamp;
  finished_at: NullableTimestamp;
  updated_at: Timestamp;
}

export interface DaemonJobsTable {
  organisation_id: string;
  id: Generated<string>;
  seq: Seq;
  daemon_id: string;
  kind: 'network' | 'cancel';
  session_id: string;
  created_at: Created;
  delivered_at: NullableTimestamp;
}

export interface ChangeLogTable {
  organisation_id: string;
  id: Generated<number>;
  entity_type: string;
  entity_id: string;
  action: 'created' | 'updated' | 'deleted';
  at: Created;
}

export interface FlowsTable {
  organisation_id: string;
  bucket_start: Timestamp;
  daemon_id: string;
  src_ip: string;
  dst_ip: string;
  dst_port: number;
  protocol: string;
  packets: number;
  bytes: number;
  source: string;
  received_at: Created;
}

export interface DB {
  flows: FlowsTable;
  daemons: DaemonsTable;
  scan_sessions: ScanSessionsTable;
  daemon_jobs: DaemonJobsTable;
  change_log: ChangeLogTable;
  sites: SitesTable;
  networks: NetworksTable;
  hosts: HostsTable;
  host_addresses: HostAddressesTable;
  host_interfaces: HostInterfacesTable;
  services: ServicesTable;
  certificates: CertificatesTable;
  vulnerabilities: VulnerabilitiesTable;
  snapshots: SnapshotsTable;
  topologies: TopologiesTable;
  organisations: OrganisationsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  keys: KeysTable;
  sessions: SessionsTable;
  audit_log: AuditLogTable;
  schema_migrations: SchemaMigrationsTable;
}
