import type { ColumnDef } from '@tanstack/react-table';
import type { HostDetail } from '@surveyor/contract';
import { DataTable } from '../../../components/DataTable';
import { ago, dateTime } from '../../../lib/format';
import { useHostDetail } from '../api';

type Resource = HostDetail['cloud'][number];
type Rule = Resource['inbound'][number];

const PROVIDERS: Record<Resource['provider'], string> = { aws: 'AWS', kubernetes: 'Kubernetes' };
const KINDS: Record<Resource['kind'], string> = { instance: 'EC2 instance', interface: 'network interface', node: 'node', pod: 'pod', service: 'service', ingress: 'ingress' };
const ANYWHERE = new Set(['0.0.0.0/0', '::/0']);

/** A rule's ports as people write them: every port, one port, or a range. */
const portsOf = (r: Rule) => (r.protocol === 'all' ? 'every port' : r.fromPort === null ? '—' : r.fromPort === r.toPort ? String(r.fromPort) : `${r.fromPort}–${r.toPort}`);

const ruleColumns: ColumnDef<Rule>[] = [
  { header: 'Security group', accessorKey: 'groupId', cell: ({ row }) => <span className="mono">{row.original.groupId}</span> },
  { header: 'Protocol', accessorKey: 'protocol', cell: ({ row }) => (row.original.protocol === 'all' ? 'all' : row.original.protocol) },
  { header: 'Ports', id: 'ports', cell: ({ row }) => <span className="mono">{portsOf(row.original)}</span> },
  {
    header: 'From',
    id: 'cidrs',
    cell: ({ row }) => (
      <span className="mono">
        {row.original.cidrs.map((c, i) => (
          <span key={c}>
            {i > 0 && ', '}
            {ANYWHERE.has(c) ? <strong className="exposed-text" title="The whole internet">{c}</strong> : c}
          </span>
        ))}
      </span>
    ),
  },
];

/** A key of the provider's record as people read it: known ones named, others split from camelCase. */
const LABELS: Record<string, string> = { vpcId: 'VPC', subnetId: 'Subnet', imageId: 'Image', instanceType: 'Instance type', launchTime: 'Launched', securityGroups: 'Security groups', osImage: 'OS image' };
const labelOf = (key: string) => LABELS[key] ?? key.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/^./, (c) => c.toUpperCase()).replace(/ ([A-Z])(?=[a-z])/g, (_, c: string) => ` ${c.toLowerCase()}`);

/** A value of the provider's record as text (lists joined). */
const text = (v: unknown) => (Array.isArray(v) ? v.join(', ') : v === null || v === undefined || v === '' ? '—' : String(v));

/** What cloud accounts list this host as: shown when one does (a host only daemons saw has no such section). */
export function HostCloud({ hostId }: { hostId: string }) {
  const detail = useHostDetail(hostId);
  const cloud = detail.data?.cloud ?? [];
  if (cloud.length === 0) return null;
  return (
    <section aria-labelledby="host-cloud">
      <h2 id="host-cloud">Cloud</h2>
      {cloud.map((r) => (
        <article key={`${r.accountId}|${r.providerId}`} className={`cloud-resource${r.goneAt ? ' gone' : ''}`} aria-label={`${PROVIDERS[r.provider]} ${KINDS[r.kind]} ${r.name ?? r.providerId}`}>
          <h3>
            {PROVIDERS[r.provider]} {KINDS[r.kind]} <span className="mono">{r.providerId}</span> <span className="muted">in {r.accountName}</span>
          </h3>
          {r.goneAt && <p className="notice">No longer listed since <time dateTime={r.goneAt} title={dateTime(r.goneAt)}>{ago(r.goneAt)}</time>.</p>}
          <dl className="fields">
            <dt>Name</dt>
            <dd>{r.name ?? '—'}</dd>
            <dt>State</dt>
            <dd>{r.state || '—'}</dd>
            <dt>{r.provider === 'aws' ? 'Region' : 'Namespace'}</dt>
            <dd>{r.location ?? '—'}</dd>
            <dt>Public addresses</dt>
            <dd className="mono">{r.publicAddresses.join(', ') || '—'}</dd>
            {Object.entries(r.details)
              .filter(([k]) => k !== 'privateAddresses' && k !== 'os')
              .map(([k, v]) => (
                <div key={k} className="field-row">
                  <dt>{labelOf(k)}</dt>
                  <dd className="mono">{text(v)}</dd>
                </div>
              ))}
            <dt>{r.provider === 'aws' ? 'Tags' : 'Labels'}</dt>
            <dd>
              {Object.keys(r.labels).length === 0
                ? '—'
                : Object.entries(r.labels).map(([k, v]) => (
                    <span key={k} className="chip mono">{k}={v}</span>
                  ))}
            </dd>
            <dt>Listed since</dt>
            <dd>{dateTime(r.firstListedAt)} · record changed {ago(r.changedAt)}</dd>
          </dl>
          {r.inbound.length > 0 && <DataTable caption={`Inbound rules of ${r.providerId}`} data={r.inbound} columns={ruleColumns} rowKey={(x) => `${x.groupId}|${x.protocol}|${x.fromPort}|${x.toPort}|${x.cidrs.join()}`} />}
          {r.ports.length > 0 && (
            <p>
              Published ports:{' '}
              {r.ports.map((p, i) => (
                <span key={`${p.protocol}|${p.port}`}>
                  {i > 0 && ', '}
                  <span className="mono">{p.port}/{p.protocol}</span>
                  {p.exposed ? <strong className="exposed-text"> (exposed{p.via ? `: ${p.via}` : ''})</strong> : ''}
                </span>
              ))}
            </p>
          )}
        </article>
      ))}
    </section>
  );
}
