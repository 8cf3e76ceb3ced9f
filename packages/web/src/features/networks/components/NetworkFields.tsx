import type { FieldErrors, FieldValues, UseFormRegister } from 'react-hook-form';
import { Link } from 'react-router';
import { Field, errorAt, listOf, optionalNumber } from '../../../components/form';
import type { Site } from '../../../lib/types';
import { useOverlaps } from '../api';

export const NMAP_CATEGORIES = ['default', 'safe', 'version', 'vuln'] as const;

/** The fields a 400 may name on the add and edit forms. */
export const networkFields = ['name', 'cidr', 'siteId', 'scanIntervalMinutes', 'excludeCidrs', 'topPortsTcp', 'topPortsUdp', 'nmap'] as const;

/**
 * The settings of a network the add and the edit forms share: site, schedule, excluded ranges, top
 * ports TCP/UDP, nmap and its script categories. `edit` sends null for "no site" and "manual only"
 * (clearing them), where adding leaves them out.
 */
export function NetworkFields({ register, errors, sites, edit, onChange }: { register: UseFormRegister<FieldValues>; errors: FieldErrors; sites: Map<string, Site>; edit: boolean; onChange: () => void }) {
  const cleared = (v: unknown) => (v === '' || v === undefined || v === null ? (edit ? null : undefined) : v);
  return (
    <>
      <Field label="Site" error={errorAt(errors, 'siteId')}>
        {(a) => (
          <select {...a} {...register('siteId', { onChange, setValueAs: (v) => cleared(typeof v === 'string' ? v.trim() : v) })}>
            <option value="">No site</option>
            {[...sites.values()].map((s) => <option key={s.id} value={s.id}>{s.name} ({s.code})</option>)}
          </select>
        )}
      </Field>
      <Field label="Scan every (minutes)" error={errorAt(errors, 'scanIntervalMinutes') && 'between 15 and 10080 minutes (empty: manual only)'}>
        {(a) => <input {...a} type="number" min={15} max={10080} {...register('scanIntervalMinutes', { onChange, setValueAs: (v) => cleared(optionalNumber(v)) })} placeholder="manual only" />}
      </Field>
      <Field label="Excluded ranges" error={errorAt(errors, 'excludeCidrs')} hint="comma or space separated">
        {(a) => <input {...a} className="mono wide" {...register('excludeCidrs', { onChange, setValueAs: listOf })} placeholder="10.0.0.0/28, 10.0.0.254/32" />}
      </Field>
      <Field label="Top TCP ports" error={errorAt(errors, 'topPortsTcp')}>
        {(a) => <input {...a} type="number" min={0} max={65535} {...register('topPortsTcp', { onChange, setValueAs: optionalNumber })} placeholder="1000" />}
      </Field>
      <Field label="Top UDP ports" error={errorAt(errors, 'topPortsUdp')}>
        {(a) => <input {...a} type="number" min={0} max={65535} {...register('topPortsUdp', { onChange, setValueAs: optionalNumber })} placeholder="0" />}
      </Field>
      <fieldset>
        <legend>nmap</legend>
        <label className="check"><input type="checkbox" {...register('nmap.enabled', { onChange })} /> Run nmap (daemons with nmap only)</label>
        {NMAP_CATEGORIES.map((c) => (
          <label key={c} className="check"><input type="checkbox" value={c} {...register('nmap.scripts', { onChange })} aria-label={`Script category ${c}`} /> {c}</label>
        ))}
        {errorAt(errors, 'nmap') && <span className="field-error">{errorAt(errors, 'nmap')}</span>}
      </fieldset>
    </>
  );
}

/** The warning (never a refusal) that a range overlaps other networks of the organisation, naming each. */
export function OverlapWarning({ cidr, exceptId }: { cidr: string | undefined; exceptId?: string }) {
  const overlaps = useOverlaps(cidr, exceptId);
  const list = overlaps.data?.data ?? [];
  if (list.length === 0) return null;
  return (
    <div role="status" className="warning overlaps">
      {cidr} overlaps {list.length === 1 ? 'another network' : `${list.length} networks`}; allowed, but a host inside both is scanned by both:
      <ul>
        {list.map((n) => (
          <li key={n.id}>
            <Link to={`/networks/${n.id}`}>{n.name}</Link> (<span className="mono">{n.cidr}</span>) {n.relation === 'contains' ? 'contains it' : 'lies inside it'}
          </li>
        ))}
      </ul>
    </div>
  );
}
