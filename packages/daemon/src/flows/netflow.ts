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

/** Templates by exporter, observation domain (source id) and template id. */
export class TemplateCache {
  private readonly templates = new Map<string, Field[]>();
  set(exporter: string, domain: number, id: number, fields: Field[]) {
    this.templates.set(`${exporter}/${domain}/${id}`, fields);
  }
  get(exporter: string, domain: number, id: number) {
    return this.templates.get(`${exporter}/${domain}/${id}`);
  }
  get size() {
    return this.templates.size;
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
        cache.set(exporter, h.domain, id, fields);
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
