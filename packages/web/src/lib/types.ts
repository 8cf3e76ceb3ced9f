import type { z } from 'zod';
import type {
  ApiKeyCreated as ApiKeyCreatedSchema,
  ApiKeyInfo as ApiKeyInfoSchema,
  Certificate as CertificateSchema,
  CloudAccount as CloudAccountSchema,
  CloudSyncResult as CloudSyncResultSchema,
  CloudTestResult as CloudTestResultSchema,
  DaemonDetail as DaemonDetailSchema,
  DaemonSummary as DaemonSummarySchema,
  Delivery as DeliverySchema,
  DeliveryList as DeliveryListSchema,
  Destination as DestinationSchema,
  DestinationCreated as DestinationCreatedSchema,
  DestinationList as DestinationListSchema,
  DestinationTestResult as DestinationTestResultSchema,
  DaemonList as DaemonListSchema,
  EnrolDaemonResponse as EnrolDaemonResponseSchema,
  Host as HostSchema,
  HostTopology as HostTopologySchema,
  Network as NetworkSchema,
  Overview as OverviewSchema,
  ScanSession as ScanSessionSchema,
  SessionHistoryItem as SessionHistoryItemSchema,
  NetworkOverlaps as NetworkOverlapsSchema,
  JobStatus as JobStatusSchema,
  JobStatusList as JobStatusListSchema,
  LookupResult as LookupResultSchema,
  Member as MemberSchema,
  MemberAdded as MemberAddedSchema,
  Page,
  ScimSettings as ScimSettingsSchema,
  ScimTokenCreated as ScimTokenCreatedSchema,
  Service as ServiceSchema,
  SessionInfo as SessionInfoSchema,
  Site as SiteSchema,
  Snapshot as SnapshotSchema,
  Vulnerability as VulnerabilitySchema,
  collectionPages,
  listQueries,
} from '@surveyor/contract';

// Every API shape the console uses, inferred from the contract's schemas: nothing re-declared.

export type SessionInfo = z.infer<typeof SessionInfoSchema>;
export type Host = z.infer<typeof HostSchema>;
export type Service = z.infer<typeof ServiceSchema>;
export type Network = z.infer<typeof NetworkSchema>;
export type ScanSession = z.infer<typeof ScanSessionSchema>;
export type SessionHistoryItem = z.infer<typeof SessionHistoryItemSchema>;
export type NetworkOverlap = z.infer<typeof NetworkOverlapsSchema>['data'][number];
export type Site = z.infer<typeof SiteSchema>;
export type Vulnerability = z.infer<typeof VulnerabilitySchema>;
export type ApiKeyInfo = z.infer<typeof ApiKeyInfoSchema>;
export type ApiKeyCreated = z.infer<typeof ApiKeyCreatedSchema>;
export type JobStatus = z.infer<typeof JobStatusSchema>;
export type JobStatusList = z.infer<typeof JobStatusListSchema>;
export type DaemonList = z.infer<typeof DaemonListSchema>;
export type DaemonSummary = z.infer<typeof DaemonSummarySchema>;
export type DaemonDetail = z.infer<typeof DaemonDetailSchema>;
export type EnrolDaemonResponse = z.infer<typeof EnrolDaemonResponseSchema>;
export type Certificate = z.infer<typeof CertificateSchema>;
export type CloudAccount = z.infer<typeof CloudAccountSchema>;
export type CloudSyncResult = z.infer<typeof CloudSyncResultSchema>;
export type CloudTestResult = z.infer<typeof CloudTestResultSchema>;
export type Snapshot = z.infer<typeof SnapshotSchema>;
export type Destination = z.infer<typeof DestinationSchema>;
export type DestinationCreated = z.infer<typeof DestinationCreatedSchema>;
export type DestinationList = z.infer<typeof DestinationListSchema>;
export type DestinationTestResult = z.infer<typeof DestinationTestResultSchema>;
export type Delivery = z.infer<typeof DeliverySchema>;
export type DeliveryList = z.infer<typeof DeliveryListSchema>;
export type HostTopology = z.infer<typeof HostTopologySchema>;
export type Overview = z.infer<typeof OverviewSchema>;
export type LookupResult = z.infer<typeof LookupResultSchema>;
export type Member = z.infer<typeof MemberSchema>;
export type MemberAdded = z.infer<typeof MemberAddedSchema>;
export type ScimSettings = z.infer<typeof ScimSettingsSchema>;
export type ScimGroup = ScimSettings['groups'][number];
export type ScimTokenCreated = z.infer<typeof ScimTokenCreatedSchema>;
export type PageOf<T> = Omit<z.infer<ReturnType<typeof Page>>, 'data'> & { data: T[] };
export type CollectionName = keyof typeof collectionPages;
export type CollectionPage<N extends CollectionName> = z.infer<(typeof collectionPages)[N]>;
export type CollectionQuery<N extends CollectionName> = z.input<(typeof listQueries)[N]>;
