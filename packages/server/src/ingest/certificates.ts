import { X509Certificate } from 'node:crypto';
import { rootCertificates } from 'node:tls';

const roots = rootCertificates.map((pem) => {
  try {
    return new X509Certificate(pem);
  } catch {
    return null;
  }
}).filter((c): c is X509Certificate => c !== null);

export type TrustStatus = 'trusted' | 'expired' | 'not_yet_valid' | 'self_signed' | 'untrusted';

export interface CertificateFacts {
  subject: string;
  issuer: string;
  notBefore: Date;
  notAfter: Date;
  sha256: string;
  trustStatus: TrustStatus;
}

/**
 * What a certificate chain says, judged against Node's bundled trust store: expired and
 * not-yet-valid first, then self-signed, then trusted when each link is signed by the next and
 * the last by a known root, else untrusted. Null when the leaf cannot be parsed.
 */
export function assessChain(chainPem: string[], now = new Date()): CertificateFacts | null {
  let chain: X509Certificate[];
  try {
    chain = chainPem.map((pem) => new X509Certificate(pem));
  } catch {
    return null;
  }
  const leaf = chain[0];
  if (!leaf) return null;
  const facts = {
    subject: leaf.subject.replace(/\n/g, ', '),
    issuer: leaf.issuer.replace(/\n/g, ', '),
    notBefore: new Date(leaf.validFrom),
    notAfter: new Date(leaf.validTo),
    sha256: leaf.fingerprint256.replace(/:/g, '').toLowerCase(),
  };
  return { ...facts, trustStatus: trustOf(chain, facts, now) };
}

function trustOf(chain: X509Certificate[], f: { notBefore: Date; notAfter: Date }, now: Date): TrustStatus {
  if (f.notAfter.getTime() < now.getTime()) return 'expired';
  if (f.notBefore.getTime() > now.getTime()) return 'not_yet_valid';
  const leaf = chain[0]!;
  if (leaf.checkIssued(leaf) && leaf.verify(leaf.publicKey)) return 'self_signed';
  for (let i = 0; i + 1 < chain.length; i++) {
    if (!chain[i]!.checkIssued(chain[i + 1]!) || !chain[i]!.verify(chain[i + 1]!.publicKey)) return 'untrusted';
  }
  const top = chain.at(-1)!;
  if (roots.some((r) => r.fingerprint256 === top.fingerprint256)) return 'trusted';
  return roots.some((r) => top.checkIssued(r) && top.verify(r.publicKey)) ? 'trusted' : 'untrusted';
}

/** Trust from dates alone, when the daemon sent no chain to check. */
export function trustFromDates(notBefore: Date, notAfter: Date, now = new Date()): TrustStatus {
  if (notAfter.getTime() < now.getTime()) return 'expired';
  if (notBefore.getTime() > now.getTime()) return 'not_yet_valid';
  return 'untrusted';
}
