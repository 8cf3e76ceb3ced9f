import type { ColumnType, Generated } from 'kysely';

/** Timestamps come back as Date from both drivers; writes take Date or an SQL expression. */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** jsonb with a default: read as parsed JSON; written as JSON text. */
type Json = ColumnType<Record<string, unknown>, string | undefined, string>;

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
  last_sign_in_at: NullableTimestamp;
  deactivated_at: NullableTimestamp;
}

export interface ScimUsersTable {
  organisation_id: string;
  user_id: string;
  user_name: string;
  external_id: string | null;
  resource: ColumnType<Record<string, unknown>, string, string>;
  version: Generated<number>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ScimGroupsTable {
  organisation_id: string;
  id: Generated<string>;
  display_name: string;
  external_id: string | null;
  version: Generated<number>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ScimGroupMembersTable {
  organisation_id: string;
  group_id: string;
  user_id: string;
}

export interface AssistantTurnsTable {
  organisation_id: string;
  id: Generated<string>;
  user_id: string | null;
  at: Timestamp;
  outcome: string;
  rounds: number;
  tools: string[];
  prompt_tokens: number;
  completion_tokens: number;
  latency_ms: number;
}

/** Questions asked per organisation and outcome, ever (migration 0044): what service_ai_turns_total reports; pruning turns leaves it. */
export interface AssistantTurnTotalsTable {
  organisation_id: string;
  outcome: string;
  turns: number;
}

export interface ScimRoleMappingsTable {
  organisation_id: string;
  group_key: string;
  group_name: string;
  role: string;
  created_at: Timestamp;
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
  changes: Json;
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
  schedule_checked_at: ColumnType<Date | null, never, never>;
  schedule_outcome: ColumnType<string | null, never, never>;
  schedule_detail: ColumnType<string | null, never, never>;
  /** The session and daemon the scheduler last queued (migration 0022). */
  schedule_session_id: ColumnType<string | null, never, never>;
  schedule_daemon_id: ColumnType<string | null, never, never>;
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
  /** Set when a completed scan session covering all its addresses no longer found it (migration 0020). */
  gone_at: NullableTimestamp;
  created_at: Created;
  updated_at: Timestamp;
  // What the host page shows of the host's other rows, kept by inventory/host-summaries.ts (migration 0038).
  /** Its addresses as host() text, in address order. */
  addresses: TextArray;
  /** The distinct MACs of its addresses and interfaces, as text, in text order. */
  macs: TextArray;
  /** Its services open and present. */
  open_port_count: Generated<number>;
}

export interface HostAddressesTable {
  organisation_id: string;
  host_id: string;
  address: string;
  mac: string | null;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  updated_at: Timestamp;
}

export interface HostInterfacesTable {
  organisation_id: string;
  host_id: string;
  name: string;
  mac: string | null;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  updated_at: Timestamp;
}

export interface HostFingerprintsTable {
  organisation_id: string;
  fingerprint: string;
  host_id: string;
  created_at: Created;
}

export interface HostNeighborsTable {
  organisation_id: string;
  host_id: string;
  local_interface: string;
  remote_chassis_id: string;
  remote_port_id: string | null;
  remote_system_name: string | null;
  management_address: string | null;
  protocol: 'lldp' | 'cdp';
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  updated_at: Timestamp;
}

export interface HostVlansTable {
  organisation_id: string;
  host_id: string;
  vlan_id: number;
  name: string | null;
  tagged: TextArray;
  untagged: TextArray;
  last_seen_at: Timestamp;
  updated_at: Timestamp;
}

export interface HostRoutesTable {
  organisation_id: string;
  host_id: string;
  destination: string;
  next_hop: string | null;
  interface: Generated<string>;
  metric: number | null;
  last_seen_at: Timestamp;
  updated_at: Timestamp;
}

export interface HostLagGroupsTable {
  organisation_id: string;
  host_id: string;
  name: string;
  protocol: 'lacp' | 'static' | null;
  members: TextArray;
  last_seen_at: Timestamp;
  updated_at: Timestamp;
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
  /** Why the internet reaches it (view service_exposure), or null; stored by its writers (migration 0046). */
  exposed_via: string | null;
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
  /** current, replaced or gone (view certificate_states), stored by its writers (migration 0045). */
  state: Generated<'current' | 'replaced' | 'gone'>;
  /** The smallest tls.expiring threshold (days) already announced for this certificate. */
  expiry_notified_days: number | null;
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
  advisory_id: string | null;
  summary: string | null;
  severity: string;
  /** numeric(3,1): read as text by both drivers. */
  score: ColumnType<string | null, number | string | null | undefined, number | string | null>;
  vector: string | null;
  matched_cpe: string | null;
  /** A distribution's verdict on the service's build (migration 0035): read as parsed JSON, written as JSON text. */
  distribution: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  state: Generated<string>;
  note: string | null;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  state_changed_at: Timestamp;
  resolved_at: NullableTimestamp;
  created_at: Created;
  updated_at: Timestamp;
}

/** numeric(3,1): read as text by both drivers. */
type Score = ColumnType<string | null, number | string | null | undefined, number | string | null>;

export interface AdvisoriesTable {
  id: string;
  source: 'nvd' | 'osv';
  cve_id: string;
  aliases: ColumnType<string[], string[] | undefined, string[]>;
  summary: string | null;
  published_at: NullableTimestamp;
  modified_at: Timestamp;
  cvss31_vector: string | null;
  cvss31_score: Score;
  cvss40_vector: string | null;
  cvss40_score: Score;
  cvss30_vector: string | null;
  cvss30_score: Score;
  score: Score;
  vector: string | null;
  severity: string;
  refs: ColumnType<unknown, string | undefined, string>;
  affected: ColumnType<unknown, string, string>;
  withdrawn: Generated<boolean>;
  content_sha256: string;
  imported_at: Timestamp;
  changed_at: Timestamp;
}

export interface AdvisoryProductsTable {
  product_key: string;
  advisory_id: string;
}

export interface AdvisoryFeedTable {
  id: Generated<boolean>;
  url: string | null;
  etag: string | null;
  last_modified: string | null;
  nvd_through: NullableTimestamp;
  confirmed_at: NullableTimestamp;
  last_attempt_at: NullableTimestamp;
  last_error: string | null;
  nvd_pass_url: string | null;
  nvd_pass_end: NullableTimestamp;
  nvd_pass_from: NullableTimestamp;
  nvd_pass_index: number | null;
}

export interface ServiceMatchKeysTable {
  organisation_id: string;
  service_id: string;
  product_key: string;
}

export interface AdvisoryMatchStateTable {
  organisation_id: string;
  matched_at: Timestamp;
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

/** A stored snapshot diff (0036): the counts of the diff of `snapshot_id` against `against_id`, computed once. */
export interface SnapshotDiffsTable {
  organisation_id: string;
  snapshot_id: string;
  against_id: string;
  counts: ColumnType<Record<string, Record<string, number>>, string, string>;
  created_at: Created;
}

/** One change of a stored snapshot diff (0036): before, after and fields as JSON text. */
export interface SnapshotDiffChangesTable {
  organisation_id: string;
  snapshot_id: string;
  against_id: string;
  section: number;
  entity_id: string;
  kind: string;
  before: string | null;
  after: string | null;
  fields: string | null;
}

/** The service's signing keys (0015): the private key sealed with the secret key, never in the clear. */
export interface ServiceSigningKeysTable {
  purpose: 'attestation';
  algorithm: 'ed25519';
  public_key_pem: string;
  fingerprint: string;
  private_key_sealed: string;
  created_at: Created;
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
  /** Why the last build of the view failed (status `failed`); null otherwise. */
  failure_reason: ColumnType<string | null, string | null | undefined, string | null>;
  /** How the view groups its hosts: subnet, vlan or service. */
  group_by: Generated<string>;
  group_count: Generated<number>;
  facets: ColumnType<{ vlans: { id: number; name: string | null }[]; services: string[] }, string | undefined, string>;
  /** What the last build showed, digested (migration 0042); null before a build and once stale or failed. */
  content_digest: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A node of a topology view (0017): its id is derived from what it stands for; x, y its saved position. */
export interface TopologyNodesTable {
  organisation_id: string;
  topology_id: string;
  node_id: string;
  kind: string;
  label: string;
  data: ColumnType<Record<string, unknown>, string, string>;
  /** Top-left corner; a member's is relative to its group's. */
  x: number;
  y: number;
  /** The group node holding this member; null at the top level. */
  group_id: string | null;
  /** The host or network the node stands for (its current name is read through it). */
  ref_id: string | null;
}

export interface TopologyEdgesTable {
  organisation_id: string;
  topology_id: string;
  edge_id: string;
  source: string;
  target: string;
  kind: string;
  label: string;
  data: ColumnType<Record<string, unknown>, string, string>;
  source_group: string | null;
  target_group: string | null;
}

/** A view's read-only share link: only the SHA-256 of the token is stored. */
export interface TopologySharesTable {
  organisation_id: string;
  topology_id: string;
  token_hash: string;
  expires_at: Timestamp;
  created_by_user_id: string | null;
  created_at: Created;
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
  /** Why the daemon is degraded, from its last heartbeat; null while online (migration 0018). */
  status_reason: string | null;
  loaded_signatures: ColumnType<Record<string, number>, string | undefined, string>;
  flows_dropped: Generated<number>;
  heartbeat_interval_seconds: Generated<number>;
  last_heartbeat_at: NullableTimestamp;
  last_seen_at: NullableTimestamp;
  registered_at: Created;
  created_at: Created;
  updated_at: Timestamp;
  /** Set while an admin has disabled the daemon: no scans are handed to it (migration 0023). */
  disabled_at: NullableTimestamp;
  /** Set once removed: the row stays for the history of its sessions, left out of every list (migration 0023). */
  removed_at: NullableTimestamp;
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
  action: 'created' | 'updated' | 'deleted' | 'started' | 'finished' | 'failed';
  at: Created;
}

/** The largest change-log id events.prune deleted per organisation (migration 0037): a resume from below it is a gap. */
export interface ChangeLogPrunedTable {
  organisation_id: string;
  through_id: number;
  pruned_at: Timestamp;
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

/** Flow records per conversation and hour (flow_hours) or UTC day (flow_days), migration 0039. */
export interface FlowRollupsRow {
  organisation_id: string;
  src_ip: string;
  dst_ip: string;
  dst_port: number;
  protocol: string;
  bytes: number;
  packets: number;
  flows: number;
  last_seen: Timestamp;
}

/** How far each organisation's flow records are rolled up (migration 0039). */
export interface FlowRollupMarksTable {
  organisation_id: string;
  hours_until: Timestamp;
  days_until: Timestamp;
}

/** Digests of the observation batches a scan session has applied (retries answered at once). */
export interface ScanBatchesTable {
  organisation_id: string;
  session_id: string;
  digest: string;
  rows: number;
  received_at: Created;
}

/** Digests of the flow batches a daemon has delivered (retries recognised). */
export interface FlowBatchesTable {
  organisation_id: string;
  daemon_id: string;
  digest: string;
  records: number;
  received_at: Created;
}

/** One row per job as a whole (organisation_id null) and per organisation it works for. */
/** The schedule's slots: which interval of each job has been claimed (runner.ts, migration 0032). */
export interface HostPlatformCpesTable {
  organisation_id: string;
  host_id: string;
  cpe: string;
  seen_at: Timestamp;
}

export interface JobSlotsTable {
  job: string;
  interval_ms: number;
  slot: number;
  claimed_at: Timestamp;
}

export interface JobStatusTable {
  job: string;
  organisation_id: string | null;
  /** Null until a run has finished (a run may have started: `started_at`). */
  last_run_at: NullableTimestamp;
  duration_ms: number | null;
  outcome: 'ok' | 'failed' | null;
  error: string | null;
  attempts: number | null;
  detail: Json;
  last_ok_at: NullableTimestamp;
  /** Set while a run is in progress, or left by one that was interrupted; cleared when a run records its end. */
  started_at: NullableTimestamp;
  updated_at: Timestamp;
}

export interface DependencyEdgesTable {
  organisation_id: string;
  site_id: string | null;
  src_host_id: string;
  dst_host_id: string;
  dst_service_id: string;
  bytes: number;
  packets: number;
  flows: number;
  last_seen_at: Timestamp;
  built_at: Timestamp;
}

type Severity = 'info' | 'warning' | 'critical';

export interface EventsTable {
  organisation_id: string;
  id: Generated<string>;
  seq: Seq;
  kind: string;
  severity: Severity;
  occurred_at: Timestamp;
  subject_type: string;
  /** Text, not uuid: a subject is not always a row (`job.failed` names a job). */
  subject_id: string;
  data: Json;
}

export interface NotificationDestinationsTable {
  organisation_id: string;
  id: Generated<string>;
  name: string;
  kind: 'webhook' | 'slack' | 'email';
  enabled: Generated<boolean>;
  event_kinds: string[];
  min_severity: Severity;
  /** A redacted summary to show; the settings themselves are in config_sealed (AES-256-GCM). */
  target: string;
  config_sealed: string;
  created_at: Created;
  updated_at: Timestamp;
}

export interface NotificationDeliveriesTable {
  organisation_id: string;
  id: Generated<string>;
  event_id: string;
  destination_id: string;
  state: Generated<'pending' | 'delivered' | 'dead'>;
  attempts: Generated<number>;
  next_attempt_at: Timestamp;
  claimed_until: NullableTimestamp;
  last_status: number | null;
  last_error: string | null;
  created_at: Created;
  updated_at: Timestamp;
  delivered_at: NullableTimestamp;
}

export interface NotificationAttemptsTable {
  organisation_id: string;
  delivery_id: string;
  attempt: number;
  attempted_at: Timestamp;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
}

/** A cloud account (issue 25): AWS or Kubernetes, its credentials sealed (AES-256-GCM), its last sync. */
export interface CloudAccountsTable {
  organisation_id: string;
  id: Generated<string>;
  kind: 'aws' | 'kubernetes';
  name: string;
  site_id: string | null;
  enabled: Generated<boolean>;
  settings: Json;
  credentials_sealed: string;
  credential_hint: Generated<string>;
  provider_account: string | null;
  last_sync_at: NullableTimestamp;
  last_sync_ms: number | null;
  last_sync_status: 'ok' | 'failed' | null;
  last_sync_error: string | null;
  last_sync_counts: Json;
  last_sync_warnings: Generated<string[]>;
  sync_cursor: Json;
  sync_lease_until: NullableTimestamp;
  created_at: Created;
  updated_at: Timestamp;
}

/** What a cloud account lists, one row per resource, beside the host it became. */
export interface CloudResourcesTable {
  organisation_id: string;
  account_id: string;
  provider_id: string;
  kind: 'instance' | 'interface' | 'node' | 'pod' | 'service' | 'ingress' | 'vpc' | 'subnet';
  host_id: string | null;
  name: string | null;
  state: Generated<string>;
  location: string | null;
  public_addresses: TextArray;
  labels: Json;
  data: Json;
  /** A JSON array (security-group rules). */
  inbound: Json;
  /** A JSON array (published ports). */
  ports: Json;
  content_hash: string;
  first_seen_at: Created;
  last_seen_at: Timestamp;
  gone_at: NullableTimestamp;
}

/**
 * Every table the migrations create (test/schema.test.ts compares this with a migrated
 * database). A partitioned table (flows) is its parent; its daily partitions are not listed.
 */
export interface DB {
  flows: FlowsTable;
  flow_batches: FlowBatchesTable;
  flow_hours: FlowRollupsRow & { hour: Timestamp };
  flow_days: FlowRollupsRow & { day: Timestamp };
  flow_rollups: FlowRollupMarksTable;
  scan_batches: ScanBatchesTable;
  host_platform_cpes: HostPlatformCpesTable;
  job_slots: JobSlotsTable;
  job_status: JobStatusTable;
  dependency_edges: DependencyEdgesTable;
  events: EventsTable;
  notification_destinations: NotificationDestinationsTable;
  notification_deliveries: NotificationDeliveriesTable;
  notification_attempts: NotificationAttemptsTable;
  cloud_accounts: CloudAccountsTable;
  cloud_resources: CloudResourcesTable;
  daemons: DaemonsTable;
  scan_sessions: ScanSessionsTable;
  daemon_jobs: DaemonJobsTable;
  change_log: ChangeLogTable;
  change_log_pruned: ChangeLogPrunedTable;
  sites: SitesTable;
  networks: NetworksTable;
  hosts: HostsTable;
  host_addresses: HostAddressesTable;
  host_interfaces: HostInterfacesTable;
  host_fingerprints: HostFingerprintsTable;
  host_neighbors: HostNeighborsTable;
  host_vlans: HostVlansTable;
  host_routes: HostRoutesTable;
  host_lag_groups: HostLagGroupsTable;
  services: ServicesTable;
  certificates: CertificatesTable;
  vulnerabilities: VulnerabilitiesTable;
  advisories: AdvisoriesTable;
  advisory_products: AdvisoryProductsTable;
  advisory_feed: AdvisoryFeedTable;
  service_match_keys: ServiceMatchKeysTable;
  advisory_match_state: AdvisoryMatchStateTable;
  snapshots: SnapshotsTable;
  snapshot_diffs: SnapshotDiffsTable;
  snapshot_diff_changes: SnapshotDiffChangesTable;
  service_signing_keys: ServiceSigningKeysTable;
  topologies: TopologiesTable;
  topology_nodes: TopologyNodesTable;
  topology_edges: TopologyEdgesTable;
  topology_shares: TopologySharesTable;
  organisations: OrganisationsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  scim_users: ScimUsersTable;
  scim_groups: ScimGroupsTable;
  scim_group_members: ScimGroupMembersTable;
  scim_role_mappings: ScimRoleMappingsTable;
  assistant_turns: AssistantTurnsTable;
  assistant_turn_totals: AssistantTurnTotalsTable;
  keys: KeysTable;
  sessions: SessionsTable;
  audit_log: AuditLogTable;
  schema_migrations: SchemaMigrationsTable;
}
