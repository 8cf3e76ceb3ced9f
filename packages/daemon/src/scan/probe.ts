import { X509Certificate } from 'node:crypto';
import { isIP, type Socket, connect as tcpConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

export type PortState = 'open' | 'closed' | 'filtered';

/** A TCP connect to one port, no root needed: open (connected), closed (refused) or filtered (no answer). */
export function connectProbe(address: string, port: number, timeoutMs: number, signal?: AbortSignal): Promise<PortState> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve('filtered');
    const socket = tcpConnect({ host: address, port });
    let done = false;
    const finish = (state: PortState) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(state);
    };
    const onAbort = () => finish('filtered');
    const timer = setTimeout(() => finish('filtered'), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => finish('open'));
    socket.once('error', (e: NodeJS.ErrnoException) => finish(e.code === 'ECONNREFUSED' ? 'closed' : 'filtered'));
  });
}

/** A certificate chain a TLS port presented, leaf first (decisions.md, tls observations). */
export interface CertificateInfo {
  chainPem: string[];
  subject: string;
  issuer: string;
  notBefore: string;
  notAfter: string;
  sha256: string;
}

export interface Banner {
  /** Printable text of what the port said (first bytes), or undefined when it said nothing. */
  text?: string;
  /** The raw bytes as latin1, for signature matching. */
  raw: string;
  tls?: CertificateInfo;
}

const MAX_BANNER = 1024;

/** Reads what a connected socket says within `idleMs` (up to MAX_BANNER bytes), optionally after sending `send`. */
function read(socket: Socket, idleMs: number, send?: string): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let timer: NodeJS.Timeout;
    const finish = () => {
      clearTimeout(timer);
      socket.removeAllListeners('data');
      resolve(Buffer.concat(chunks).subarray(0, MAX_BANNER));
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(finish, idleMs);
    };
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      size += d.length;
      if (size >= MAX_BANNER) finish();
      else arm();
    });
    socket.once('end', finish);
    socket.once('close', finish);
    socket.once('error', finish);
    arm();
    if (send) socket.write(send);
  });
}

function openPlain(address: string, port: number, timeoutMs: number): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const s = tcpConnect({ host: address, port });
    const timer = setTimeout(() => {
      s.destroy();
      resolve(undefined);
    }, timeoutMs);
    s.once('connect', () => {
      clearTimeout(timer);
      resolve(s);
    });
    s.once('error', () => {
      clearTimeout(timer);
      s.destroy();
      resolve(undefined);
    });
  });
}

function httpProbe(address: string) {
  return `GET / HTTP/1.0\r\nHost: ${isIP(address) === 6 ? `[${address}]` : address}\r\nUser-Agent: surveyor-daemon\r\n\r\n`;
}

/** Printable text: control characters other than tab, CR and LF become `.`; trailing whitespace trimmed. */
export function printable(raw: Buffer): string {
  return raw
    .toString('latin1')
    .replace(/[^\t\r\n\x20-\x7e\xa0-\xff]/g, '.')
    .trimEnd();
}

/**
 * What an open port says: first whatever it sends unasked (SSH, SMTP, FTP); if nothing, a TLS
 * handshake (capturing the certificate chain) and an HTTP request inside it; if the handshake fails,
 * an HTTP request in the clear.
 */
export async function grabBanner(address: string, port: number, timeoutMs: number): Promise<Banner> {
  const plain = await openPlain(address, port, timeoutMs);
  if (!plain) return { raw: '' };
  const first = await read(plain, Math.min(timeoutMs, 1000));
  plain.destroy();
  if (first.length > 0) return { raw: first.toString('latin1'), text: printable(first) };

  const tls = await tlsHandshake(address, port, timeoutMs);
  if (tls) {
    const answer = await read(tls.socket, Math.min(timeoutMs, 1500), httpProbe(address));
    tls.socket.destroy();
    return { raw: answer.toString('latin1'), ...(answer.length ? { text: printable(answer) } : {}), tls: tls.cert };
  }
  const again = await openPlain(address, port, timeoutMs);
  if (!again) return { raw: '' };
  const answer = await read(again, Math.min(timeoutMs, 1500), httpProbe(address));
  again.destroy();
  return { raw: answer.toString('latin1'), ...(answer.length ? { text: printable(answer) } : {}) };
}

function tlsHandshake(address: string, port: number, timeoutMs: number): Promise<{ socket: Socket; cert: CertificateInfo } | undefined> {
  return new Promise((resolve) => {
    // Inventory, not trust: the chain is recorded whatever it is (the control plane judges trust).
    const socket = tlsConnect({ host: address, port, rejectUnauthorized: false, ...(isIP(address) ? {} : { servername: address }) });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(undefined);
    }, timeoutMs);
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      const cert = certificateInfo(socket.getPeerCertificate(true));
      if (!cert) {
        socket.destroy();
        return resolve(undefined);
      }
      resolve({ socket, cert });
    });
    socket.once('error', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(undefined);
    });
  });
}

interface PeerCert {
  raw?: Buffer;
  issuerCertificate?: PeerCert;
}

function certificateInfo(peer: PeerCert): CertificateInfo | undefined {
  const chain: Buffer[] = [];
  const seen = new Set<string>();
  for (let c: PeerCert | undefined = peer; c?.raw && chain.length < 10; c = c.issuerCertificate) {
    const key = c.raw.toString('base64');
    if (seen.has(key)) break; // a self-signed root names itself as its issuer
    seen.add(key);
    chain.push(c.raw);
  }
  if (chain.length === 0) return undefined;
  const leaf = new X509Certificate(chain[0]!);
  return {
    chainPem: chain.map((der) => new X509Certificate(der).toString().trim()),
    subject: leaf.subject.split('\n').join(', '),
    issuer: leaf.issuer.split('\n').join(', '),
    notBefore: new Date(leaf.validFrom).toISOString(),
    notAfter: new Date(leaf.validTo).toISOString(),
    sha256: leaf.fingerprint256.replace(/:/g, '').toLowerCase(),
  };
}
