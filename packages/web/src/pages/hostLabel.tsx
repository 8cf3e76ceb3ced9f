import { Link } from 'react-router';
import type { Host } from '../types';

/** A link to a host by id, named from the first 500 hosts when it is among them. */
export function HostLink({ id, hosts }: { id: string; hosts: Map<string, Host> }) {
  const h = hosts.get(id);
  return <Link to={`/hosts/${id}`}>{h ? (h.hostname ?? h.fqdn ?? h.addresses[0] ?? h.id.slice(0, 8)) : `${id.slice(0, 8)}…`}</Link>;
}
