import { toCpe23 } from './cpe.js';

/** A service the daemon's own signatures recognised from a banner. */
export interface Identified {
  signatureId: string;
  name: string;
  product?: string;
  vendor?: string;
  version?: string;
  cpe?: string;
  confidence: number;
}

interface Signature {
  id: string;
  name: string;
  /** Tested against the banner text (server-first bytes, or the answer to the probe sent). */
  pattern: RegExp;
  product?: string;
  vendor?: string;
  /** CPE 2.2 part `a:vendor:product`; the version comes from the match group `version`. */
  cpe?: string;
  confidence: number;
}

// The daemon's core signatures: a few common, unambiguous banners. nmap's -sV covers the long tail.
const SIGNATURES: Signature[] = [
  { id: 'core:ssh-openssh', name: 'ssh', pattern: /^SSH-[\d.]+-OpenSSH_(?<version>[\w.]+)/, product: 'OpenSSH', vendor: 'OpenBSD', cpe: 'a:openbsd:openssh', confidence: 90 },
  { id: 'core:ssh-dropbear', name: 'ssh', pattern: /^SSH-[\d.]+-dropbear_(?<version>[\w.]+)/, product: 'Dropbear sshd', vendor: 'Matt Johnston', cpe: 'a:dropbear_ssh_project:dropbear_ssh', confidence: 90 },
  { id: 'core:ssh', name: 'ssh', pattern: /^SSH-[\d.]+-/, confidence: 80 },
  { id: 'core:http-nginx', name: 'http', pattern: /^HTTP\/1\.[01] \d{3}[^]*?\r?\nServer: nginx\/(?<version>[\d.]+)/i, product: 'nginx', vendor: 'F5', cpe: 'a:f5:nginx', confidence: 85 },
  { id: 'core:http-apache', name: 'http', pattern: /^HTTP\/1\.[01] \d{3}[^]*?\r?\nServer: Apache\/(?<version>[\d.]+)/i, product: 'Apache httpd', vendor: 'Apache', cpe: 'a:apache:http_server', confidence: 85 },
  { id: 'core:http', name: 'http', pattern: /^HTTP\/1\.[01] \d{3}/, confidence: 70 },
  { id: 'core:smtp', name: 'smtp', pattern: /^220[ -][^\r\n]*E?SMTP/i, confidence: 70 },
  { id: 'core:ftp', name: 'ftp', pattern: /^220[ -][^\r\n]*FTP/i, confidence: 60 },
  { id: 'core:pop3', name: 'pop3', pattern: /^\+OK[^\r\n]*(POP|ready)/i, confidence: 60 },
  { id: 'core:imap', name: 'imap', pattern: /^\* OK[^\r\n]*IMAP/i, confidence: 60 },
  { id: 'core:mysql', name: 'mysql', pattern: /^.{4}\x0a(?<version>\d+\.\d+\.\d+)[\w.-]*\x00/s, product: 'MySQL', vendor: 'Oracle', cpe: 'a:oracle:mysql', confidence: 70 },
];

/** How many core signatures are loaded (reported in heartbeats). */
export const CORE_SIGNATURE_COUNT = SIGNATURES.length;

/** The first core signature that matches the banner; `tls` names the service of a TLS-wrapped one (https). */
export function identify(banner: string, tls: boolean): Identified | undefined {
  for (const s of SIGNATURES) {
    const m = s.pattern.exec(banner);
    if (!m) continue;
    const version = m.groups?.version;
    const cpe = s.cpe ? toCpe23(`cpe:/${s.cpe}${version ? `:${version}` : ''}`) : undefined;
    return {
      signatureId: s.id,
      name: tls && s.name === 'http' ? 'https' : s.name,
      ...(s.product ? { product: s.product } : {}),
      ...(s.vendor ? { vendor: s.vendor } : {}),
      ...(version ? { version } : {}),
      ...(cpe ? { cpe } : {}),
      confidence: s.confidence,
    };
  }
  return undefined;
}
