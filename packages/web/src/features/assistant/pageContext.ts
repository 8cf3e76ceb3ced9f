import { isUuid } from '@surveyor/contract';
import { matchPath, useLocation } from 'react-router';
import { hostLabel } from '../../components/hostLabel';
import { useDaemons, useLookup } from '../../lib/queries';
import type { Context } from './conversation';

// What the page on screen shows, offered to the assistant as a starting point: a host, a CVE (the
// vulnerabilities list searched for one CVE id, where the console's CVE links lead), a network or
// a daemon, named as the page names it.

const CVE = /^CVE-\d{4}-\d{4,}$/i;

/** The record of the page on screen with its name, or null on a page that shows no one record. */
export function usePageContext(): Context | null {
  const { pathname, search } = useLocation();
  const id = (pattern: string) => {
    const v = matchPath(pattern, pathname)?.params.id;
    return v && isUuid(v) ? v : null;
  };
  const host = id('/hosts/:id');
  const network = id('/networks/:id');
  const daemon = id('/daemons/:id');
  const cve = pathname === '/vulnerabilities' ? (new URLSearchParams(search).get('search') ?? '').trim() : '';
  const hosts = useLookup('hosts', [host]).byId;
  const networks = useLookup('networks', [network]).byId;
  const daemons = useDaemons(daemon !== null);

  if (host) {
    const label = hostLabel(hosts.get(host));
    return label ? { type: 'host', id: host, label } : null;
  }
  if (network) {
    const n = networks.get(network);
    return n ? { type: 'network', id: network, label: `${n.name} (${n.cidr})`.slice(0, 200) } : null;
  }
  if (daemon) {
    const d = daemons.data?.data.find((x) => x.id === daemon);
    return d ? { type: 'daemon', id: daemon, label: d.name.slice(0, 200) } : null;
  }
  if (CVE.test(cve)) return { type: 'vulnerability', id: cve.toUpperCase(), label: cve.toUpperCase() };
  return null;
}

/** A question to start from about the record (the user edits it or asks it as it is). */
export function starterQuestion(c: Context): string {
  const name = c.label ?? c.id;
  switch (c.type) {
    case 'host':
      return `What do we know about ${name}: its services, open findings and certificates?`;
    case 'vulnerability':
      return `Which hosts does ${name} affect, and where is it still open?`;
    case 'network':
      return `What did the latest scans of ${name} find?`;
    case 'daemon':
      return `How is the daemon ${name} doing, and what has it scanned lately?`;
    default:
      return `What do we know about ${name}?`;
  }
}

/** The word for a record's kind. */
export const contextWord: Record<Context['type'], string> = {
  host: 'host',
  vulnerability: 'CVE',
  service: 'service',
  snapshot: 'snapshot',
  network: 'network',
  daemon: 'daemon',
  certificate: 'certificate',
};
