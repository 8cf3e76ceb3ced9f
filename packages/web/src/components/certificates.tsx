import type { CertificateExpiryWindow, CertificateState, TrustStatus } from '@surveyor/contract';
import type { z } from 'zod';
import { daysLeft } from '../lib/format';

// How a certificate's trust and expiry read on every screen that shows one.

export type Trust = z.infer<typeof TrustStatus>;

export const trustLabels: Record<Trust, string> = {
  trusted: 'Trusted',
  expired: 'Expired',
  not_yet_valid: 'Not yet valid',
  self_signed: 'Self-signed',
  untrusted: 'Untrusted',
};

/** The overview's expiry windows, as the certificates filter offers them. */
export const expiryLabels: Record<CertificateExpiryWindow, string> = {
  expired: 'Expired',
  '1d': 'Within 1 day',
  '7d': 'Within 7 days',
  '14d': 'Within 14 days',
  '30d': 'Within 30 days',
};

/** Days left until notAfter: negative (expired) in red, 30 days or fewer in amber. */
export function DaysLeft({ notAfter }: { notAfter: string }) {
  const d = daysLeft(notAfter);
  const tone = d < 0 ? 'days-expired' : d <= 30 ? 'days-soon' : undefined;
  return <span className={`num ${tone ?? ''}`} title={d < 0 ? `expired ${-d} days ago` : undefined}>{d}</span>;
}

export const certificateStateLabels: Record<z.infer<typeof CertificateState>, string> = { current: 'In use', replaced: 'Replaced', gone: 'Service gone' };

/** A certificate no longer presented says so (word and colour); a current one shows nothing. */
export function CertificateStateBadge({ state }: { state: z.infer<typeof CertificateState> }) {
  if (state === 'current') return null;
  return <span className={`badge cert-${state}`} title={state === 'replaced' ? 'A newer certificate was seen on the same address and port.' : 'The service on this port is gone.'}>{certificateStateLabels[state]}</span>;
}
