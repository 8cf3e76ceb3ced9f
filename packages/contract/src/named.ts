import type { z } from 'zod';
import { Problem } from './common.js';
import { CancelJob, FlowRecord, NetworkJob, PollResponse, RegisterResponse, ScanSession } from './daemon.js';
import { EventPayload } from './events.js';
import { Certificate, Cidr, Host, IpAddress, Network, NmapSettings, Service, Site, Snapshot, SnapshotStats, Topology, Vulnerability, collectionPages } from './inventory.js';
import { JobStatus } from './jobs.js';
import { Delivery, Destination } from './notifications.js';
import { HostTopology } from './topology.js';

/**
 * The schemas `/openapi.json` names in `components.schemas` and references wherever they appear
 * (generated clients get one type per resource). A schema derived from one of these (`.describe()`,
 * `.extend()`) is a new schema and stays inline.
 */
export const schemaNames: ReadonlyMap<z.ZodType, string> = new Map<z.ZodType, string>([
  [Problem, 'Problem'],
  [Site, 'Site'],
  [Network, 'Network'],
  [NmapSettings, 'NmapSettings'],
  [Host, 'Host'],
  [IpAddress, 'Address'],
  [Cidr, 'Cidr'],
  [Service, 'Service'],
  [Certificate, 'Certificate'],
  [Vulnerability, 'Vulnerability'],
  [Snapshot, 'Snapshot'],
  [SnapshotStats, 'SnapshotStats'],
  [Topology, 'Topology'],
  [HostTopology, 'HostTopology'],
  [ScanSession, 'ScanSession'],
  [RegisterResponse, 'Daemon'],
  [PollResponse, 'Job'],
  [NetworkJob, 'NetworkJob'],
  [CancelJob, 'CancelJob'],
  [FlowRecord, 'FlowRecord'],
  [EventPayload, 'Event'],
  [JobStatus, 'JobStatus'],
  [Destination, 'Destination'],
  [Delivery, 'Delivery'],
  [collectionPages.hosts, 'HostPage'],
  [collectionPages.services, 'ServicePage'],
  [collectionPages.networks, 'NetworkPage'],
  [collectionPages.sites, 'SitePage'],
  [collectionPages.certificates, 'CertificatePage'],
  [collectionPages.vulnerabilities, 'VulnerabilityPage'],
  [collectionPages.snapshots, 'SnapshotPage'],
  [collectionPages.topologies, 'TopologyPage'],
]);
