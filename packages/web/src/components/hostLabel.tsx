import { Link } from 'react-router';
import type { Host } from '../lib/types';

/** What names a host: its hostname, FQDN, first address, or the start of its id. */
export function hostLabel(h: Host): string;
export function hostLabel(h: Host | undefined): string | undefined;
export function hostLabel(h: Host | undefined): string | undefined {
  return h ? (h.hostname ?? h.fqdn ?? h.addresses[0] ?? h.id.slice(0, 8)) : undefined;
}

/** Hosts in the order of their labels, numbers in them compared as numbers: srv-2 before srv-10, 10.0.0.9 before 10.0.0.10. */
export function byHostLabel(a: Host, b: Host): number {
  return hostLabel(a).localeCompare(hostLabel(b), undefined, { numeric: true });
}

/** A link to a host by id, named from the hosts looked up for the rows shown (`useHostNames`). */
export function HostLink({ id, hosts }: { id: string; hosts: Map<string, Host> }) {
  return <Link className="nowrap" to={`/hosts/${id}`}>{hostLabel(hosts.get(id)) ?? `${id.slice(0, 8)}…`}</Link>;
}
