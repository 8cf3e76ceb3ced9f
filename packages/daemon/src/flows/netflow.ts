import { canonicalIp } from '@surveyor/contract';

// NetFlow v9 (RFC 3954) and IPFIX (RFC 7011) export packets: templates kept per exporter and
// observation domain, data records decoded into unidirectional flows.

export interface RawFlow {
  srcIp: string;
  dstIp: string;
  srcPort: number;
  dstPort: number;
  protocol: number;
  packets: number;
  bytes: number;
  /** Flow start, ms since the epoch. */
  startMs: number;
  source: 'netflow9' | 'ipfix';
}

interface Field {
  type: number;
  length: number;
}

export interface TemplateLimits {
  /** Templates kept per exporter and observation domain (the oldest goes first). */
  perDomain: number;
  /** Templates kept in all (the oldest goes first). */
  total: number;
}

/**
 * Templates by exporter, observation domain (source id) and template id, bounded: an exporter
 * that keeps defining new template ids (or many exporters) cannot grow it without limit. A full
 * domain, or a full cache, forgets its oldest template (a redefinition counts as new); an
 * exporter re-sends its templates periodically, so a forgotten one comes back.
 */
export class TemplateCache {
  /** exporter/domain -> template id -> fields; each inner map in insertion order (oldest first). */
  private readonly domains = new Map<string, Map<number, Field[]>>();
  /** Every template as [exporter/domain, id], oldest first. */
  private readonly order = new Map<string, [string, number]>();

  constructor(readonly limits: TemplateLimits = { perDomain: 256, total: 4096 }) {}

  set(exporter: string, domain: number, id: number, fields: Field[]) {
    const dk = `${exporter}/${domain}`;
    this.delete(exporter, domain, id);
    let templates = this.domains.get(dk);
    if (!templates) this.domains.set(dk, (templates = new Map()));
    if (templates.size >= this.limits.perDomain) this.drop(dk, templates.keys().next().value!);
    if (this.order.size >= this.limits.total) {
      const [oldDk, oldId] = this.order.values().next().value!;
      this.drop(oldDk, oldId);
    }
    // The domain's map may have been emptied (and removed) by the drops above.
    if (!this.domains.has(dk)) this.domains.set(dk, templates);
    templates.set(id, fields);
    this.order.set(`${dk}/${id}`, [dk, id]);
  }

  get(exporter: string, domain: number, id: number) {
    return this.domains.get(`${exporter}/${domain}`)?.get(id);
  }

  /** Forgets one template (an IPFIX withdrawal). */
  delete(exporter: string, domain: number, id: number) {
    this.drop(`${exporter}/${domain}`, id);
  }

  /** Forgets every template of an exporter's observation domain (an IPFIX all-templates withdrawal). */
  deleteDomain(exporter: string, domain: number) {
    const dk = `${exporter}/${domain}`;
    for (const id of [...(this.domains.get(dk)?.keys() ?? [])]) this.drop(dk, id);
  }

  get size() {
    return this.order.size;
  }

  private drop(dk: string, id: number) {
    const templates = this.domains.get(dk);
    if (!templates?.delete(id)) return;
    this.order.delete(`${dk}/${id}`);
    if (templates.size === 0) this.domains.delete(dk);
  }
}

function uint(buf: Buffer, off: number, len: number): number {
  let n = 0;
  for (let i = 0; i < len; i++) n = n * 256 + buf[off + i]!;
  return n;
}

function ipv4(buf: Buffer, off: number) {
  return `${buf[off]}.${buf[off + 1]}.${buf[off + 2]}.${buf[off + 3]}`;
}

function ipv6(buf: Buffer, off: number) {
  const groups: string[] = [];
  for (let i = 0; i < 8; i++) groups.push(buf.readUInt16BE(off + i * 2).toString(16));
  return canonicalIp(groups.join(':'))!;
}

interface Header {
  version: 9 | 10;
  /** Export time, ms since the epoch. */
  exportMs: number;
  /** NetFlow v9 only: the exporter's uptime at export, ms. */
  uptimeMs: number;
  domain: number;
  setsStart: number;
  end: number;
}

function header(buf: Buffer): Header | null {
  if (buf.length < 16) return null;
  const version = buf.readUInt16BE(0);
  if (version === 9 && buf.length >= 20) return { version: 9, uptimeMs: buf.readUInt32BE(4), exportMs: buf.readUInt32BE(8) * 1000, domain: buf.readUInt32BE(16), setsStart: 20, end: buf.length };
  if (version === 10) return { version: 10, uptimeMs: 0, exportMs: buf.readUInt32BE(4) * 1000, domain: buf.readUInt32BE(12), setsStart: 16, end: Math.min(buf.length, buf.readUInt16BE(2)) };
  return null;
}

/** Decodes one export packet from `exporter` (address:port); templates it carries are remembered. */
export function decodePacket(buf: Buffer, exporter: string, cache: TemplateCache): RawFlow[] {
  const h = header(buf);
  if (!h) return [];
  const templateSet = h.version === 9 ? 0 : 2;
  const flows: RawFlow[] = [];
  for (let off = h.setsStart; off + 4 <= h.end; ) {
    const setId = buf.readUInt16BE(off);
    const length = buf.readUInt16BE(off + 2);
    if (length < 4 || off + length > h.end) break;
    const end = off + length;
    if (setId === templateSet) {
      for (let p = off + 4; p + 4 <= end; ) {
        const id = buf.readUInt16BE(p);
        const count = buf.readUInt16BE(p + 2);
        p += 4;
        if (h.version === 10 && count === 0) {
          // IPFIX withdrawal (RFC 7011 8.1): a template record without fields; the set's own id withdraws them all.
          if (id === templateSet) cache.deleteDomain(exporter, h.domain);
          else if (id >= 256) cache.delete(exporter, h.domain, id);
          continue;
        }
        if (id < 256) break; // padding
        const fields: Field[] = [];
        for (let i = 0; i < count && p + 4 <= end; i++) {
          let type = buf.readUInt16BE(p);
          const len = buf.readUInt16BE(p + 2);
          p += 4;
          if (h.version === 10 && type & 0x8000) {
            type = 0x10000 | (type & 0x7fff); // enterprise-specific: never one of ours
            p += 4;
          }
          fields.push({ type, length: len });
        }
        if (fields.length > 0) cache.set(exporter, h.domain, id, fields);
      }
    } else if (setId >= 256) {
      const fields = cache.get(exporter, h.domain, setId);
      if (fields) {
        const fixed = fields.every((f) => f.length !== 65535);
        const minLen = fields.reduce((n, f) => n + (f.length === 65535 ? 1 : f.length), 0);
        for (let p = off + 4; p + minLen <= end && minLen > 0; ) {
          const r = record(buf, p, end, fields, h);
          if (!r) break;
          if (r.flow) flows.push(r.flow);
          p = r.next;
          if (fixed && end - p < minLen) break; // padding
        }
      }
    }
    off = end;
  }
  return flows;
}

function record(buf: Buffer, start: number, end: number, fields: Field[], h: Header): { flow?: RawFlow; next: number } | null {
  const v: Record<string, number | string> = {};
  let p = start;
  for (const f of fields) {
    let len = f.length;
    if (len === 65535) {
      len = buf[p]!;
      p += 1;
      if (len === 255) {
        len = buf.readUInt16BE(p);
        p += 2;
      }
    }
    if (p + len > end) return null;
    switch (f.type) {
      case 1:
      case 85:
        v.bytes = uint(buf, p, len);
        break;
      case 2:
      case 86:
        v.packets = uint(buf, p, len);
        break;
      case 4:
        v.protocol = uint(buf, p, len);
        break;
      case 7:
        v.srcPort = uint(buf, p, len);
        break;
      case 11:
        v.dstPort = uint(buf, p, len);
        break;
      case 8:
        if (len === 4) v.srcIp = ipv4(buf, p);
        break;
      case 12:
        if (len === 4) v.dstIp = ipv4(buf, p);
        break;
      case 27:
        if (len === 16) v.srcIp = ipv6(buf, p);
        break;
      case 28:
        if (len === 16) v.dstIp = ipv6(buf, p);
        break;
      case 22: // flowStartSysUpTime (ms)
        v.startUptime = uint(buf, p, len);
        break;
      case 150:
        v.startMs = uint(buf, p, len) * 1000;
        break;
      case 152:
        v.startMs = uint(buf, p, len);
        break;
      case 154:
        v.startMs = Math.floor(uint(buf, p, len) / 1000);
        break;
    }
    p += len;
  }
  if (typeof v.srcIp !== 'string' || typeof v.dstIp !== 'string') return { next: p };
  let startMs = typeof v.startMs === 'number' ? v.startMs : h.exportMs;
  if (typeof v.startUptime === 'number' && h.version === 9) startMs = h.exportMs - (h.uptimeMs - v.startUptime);
  return {
    next: p,
    flow: {
      srcIp: v.srcIp,
      dstIp: v.dstIp,
      srcPort: Number(v.srcPort ?? 0),
      dstPort: Number(v.dstPort ?? 0),
      protocol: Number(v.protocol ?? 0),
      packets: Number(v.packets ?? 0),
      bytes: Number(v.bytes ?? 0),
      startMs,
      source: h.version === 9 ? 'netflow9' : 'ipfix',
    },
  };
}
