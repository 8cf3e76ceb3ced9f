import { formatBytes, productLabel } from '@surveyor/contract';

/** "3 min ago", "2 h ago", "5 d ago" (with the full time in a title). */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const s = Math.round((now - Date.parse(iso)) / 1000);
  if (s < 0) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export function dateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/** A job interval: "30 s", "5 min", "1 h", "1 d". */
export function every(seconds: number): string {
  if (seconds % 86400 === 0) return `${seconds / 86400} d`;
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** "product version" from a CPE 2.3 name, as `product` says a service (the vendor is not repeated). */
export function cpeLabel(cpe: string | null | undefined): string {
  if (!cpe) return '—';
  const parts = cpe.split(':');
  const [vendor, name, version] = [parts[3], parts[4], parts[5]];
  return productLabel({ product: name ?? null, vendor: vendor ?? null, version: version && version !== '*' && version !== '-' ? version : null }) ?? cpe;
}

/**
 * A service's product and version as every screen says it: "OpenSSH 9.2p1", never
 * "openbsd OpenSSH 9.2p1" (the contract's `productLabel`); "—" when neither is known.
 */
export function product(s: { product?: string | null | undefined; version?: string | null | undefined; vendor?: string | null | undefined }): string {
  return productLabel(s) ?? '—';
}

/** A count read from a first page of at most `limit`: "500+" when there is more. */
export function countOf(page: { data: unknown[]; hasMore: boolean } | undefined): string {
  if (!page) return '…';
  return page.hasMore ? `${page.data.length}+` : String(page.data.length);
}

export const stateLabels: Record<string, string> = {
  open: 'Open',
  acknowledged: 'Acknowledged',
  resolved: 'Resolved',
  false_positive: 'False positive',
};

/** "1 host", "2 hosts". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** A span of seconds, short: "45 s", "12 min", "3 h 5 min", "2 d 4 h". */
export function seconds(total: number): string {
  const s = Math.max(0, Math.round(total));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) {
    const m = Math.floor((s % 3600) / 60);
    return `${Math.floor(s / 3600)} h${m ? ` ${m} min` : ''}`;
  }
  const h = Math.floor((s % 86400) / 3600);
  return `${Math.floor(s / 86400)} d${h ? ` ${h} h` : ''}`;
}

/** Whole days from now until `iso`: negative once it has passed (an expired certificate). */
export function daysLeft(iso: string, now = Date.now()): number {
  return Math.floor((Date.parse(iso) - now) / 86_400_000);
}

/** A byte count in binary units, the one unit of the console and the server's drawings: "512 B", "3.4 KiB", "1.2 MiB", "7.0 GiB". */
export const bytes = formatBytes;
