import { type Socket, createSocket } from 'node:dgram';
import { isIP } from 'node:net';
import type { FlowRecord } from '@surveyor/contract';
import type { z } from 'zod';
import { type RawFlow, TemplateCache, decodePacket } from './netflow.js';

type Flow = z.input<typeof FlowRecord>;

const PROTOCOLS: Record<number, string> = { 1: 'icmp', 6: 'tcp', 17: 'udp', 58: 'icmpv6', 132: 'sctp' };

/**
 * The conversation a unidirectional flow belongs to, pointing client to server (spec 2.5): the
 * server is the side with the lower port (a well-known service port), ties broken by address.
 */
export function orient(f: RawFlow): { client: string; server: string; port: number } {
  const ported = f.protocol === 6 || f.protocol === 17 || f.protocol === 132;
  if (!ported) return f.srcIp <= f.dstIp ? { client: f.srcIp, server: f.dstIp, port: 0 } : { client: f.dstIp, server: f.srcIp, port: 0 };
  if (f.dstPort < f.srcPort || (f.dstPort === f.srcPort && f.srcIp <= f.dstIp)) return { client: f.srcIp, server: f.dstIp, port: f.dstPort };
  return { client: f.dstIp, server: f.srcIp, port: f.srcPort };
}

/**
 * Flow buckets by minute, with the reply half of each conversation folded into its request, in a
 * buffer of fixed size: a bucket that does not fit is dropped and counted.
 */
export class FlowBuffer {
  private buckets = new Map<string, Flow>();
  dropped = 0;
  constructor(readonly maxBuckets: number) {}

  add(f: RawFlow): void {
    const { client, server, port } = orient(f);
    const minute = Math.floor(f.startMs / 60_000) * 60_000;
    const protocol = PROTOCOLS[f.protocol] ?? String(f.protocol);
    const key = `${minute}|${client}|${server}|${port}|${protocol}|${f.source}`;
    const b = this.buckets.get(key);
    if (b) {
      b.packets += f.packets;
      b.bytes += f.bytes;
      return;
    }
    if (this.buckets.size >= this.maxBuckets) {
      this.dropped++;
      return;
    }
    this.buckets.set(key, { bucketStart: new Date(minute).toISOString(), srcIp: client, dstIp: server, dstPort: port, protocol, packets: f.packets, bytes: f.bytes, source: f.source });
  }

  get size(): number {
    return this.buckets.size;
  }

  /** Takes everything out for a delivery; `restore` puts a failed delivery back (what no longer fits is dropped). */
  take(): { flows: Flow[]; dropped: number } {
    const out = { flows: [...this.buckets.values()], dropped: this.dropped };
    this.buckets = new Map();
    this.dropped = 0;
    return out;
  }

  restore(batch: { flows: Flow[]; dropped: number }): void {
    this.dropped += batch.dropped;
    for (const f of batch.flows) {
      const key = `${Date.parse(f.bucketStart)}|${f.srcIp}|${f.dstIp}|${f.dstPort}|${f.protocol}|${f.source}`;
      const b = this.buckets.get(key);
      if (b) {
        b.packets += f.packets;
        b.bytes += f.bytes;
      } else if (this.buckets.size < this.maxBuckets) this.buckets.set(key, f);
      else this.dropped++;
    }
  }
}

/** A NetFlow v9 / IPFIX collector on UDP, feeding a FlowBuffer. */
export class FlowCollector {
  private socket: Socket | undefined;
  private readonly templates = new TemplateCache();
  packets = 0;

  /** `observe` sees every decoded record before it is bucketed (for tests and debugging). */
  constructor(
    readonly buffer: FlowBuffer,
    private readonly observe?: (f: RawFlow) => void,
  ) {}

  /** Binds `host:port` (IPv6 hosts in brackets); resolves once listening, rejects when it cannot. */
  listen(address: string): Promise<{ address: string; port: number }> {
    const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(address);
    if (!m) return Promise.reject(new Error(`flow collector: expected host:port, got ${address}`));
    const host = m[1] || '0.0.0.0';
    const socket = createSocket({ type: isIP(host) === 6 ? 'udp6' : 'udp4', reuseAddr: false });
    this.socket = socket;
    socket.on('message', (msg, rinfo) => {
      this.packets++;
      for (const f of decodePacket(msg, `${rinfo.address}:${rinfo.port}`, this.templates)) {
        this.observe?.(f);
        this.buffer.add(f);
      }
    });
    return new Promise((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(Number(m[2]), host, () => {
        socket.off('error', reject);
        socket.on('error', () => {});
        const a = socket.address();
        resolve({ address: a.address, port: a.port });
      });
    });
  }

  close(): void {
    this.socket?.close();
    this.socket = undefined;
  }
}
