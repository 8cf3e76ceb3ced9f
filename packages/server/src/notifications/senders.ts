import { createHmac } from 'node:crypto';
import nodemailer from 'nodemailer';
import type { EventPayload } from '../events/events.js';
import { redactText } from '../logger.js';
import type { DestinationConfig } from './destinations.js';

/** What one attempt at sending gave. `retry` false: a refusal that another attempt would not change. */
export interface SendOutcome {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  retry: boolean;
  durationMs: number;
}

export interface SendOptions {
  timeoutMs: number;
  userAgent: string;
  /** Links in messages (e.g. the service's base URL). */
  baseUrl: string;
}

/** decisions.md: `X-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "t.body">`. */
export function signature(secret: string, body: string, unixSeconds: number): string {
  return `t=${unixSeconds},v1=${createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex')}`;
}

/** One line a person reads: what happened, to what. */
export function summary(e: EventPayload): string {
  const d = e.data as Record<string, unknown>;
  const name = typeof d.name === 'string' ? d.name : e.subject.id;
  switch (e.kind) {
    case 'tls.expiring':
      return d.expired
        ? `Certificate ${String(d.subject)} on ${String(d.address ?? '?')}:${String(d.port ?? '?')} has expired (${String(d.notAfter)})`
        : `Certificate ${String(d.subject)} on ${String(d.address ?? '?')}:${String(d.port ?? '?')} expires within ${String(d.thresholdDays)} days (${String(d.notAfter)})`;
    case 'daemon.offline':
      return `Daemon ${name} is offline: no heartbeat for ${String(d.quietSeconds ?? '?')} s`;
    case 'daemon.online':
      return `Daemon ${name} is back online`;
    case 'vulnerability.opened':
      return `${String(d.severity)} vulnerability ${String(d.cveId)} opened${d.title ? `: ${String(d.title)}` : ''}`;
    case 'job.failed':
      return `Job ${e.subject.id} failed${d.error ? `: ${String(d.error)}` : ''}`;
    case 'scan.failed':
    case 'scan.stalled':
    case 'scan.completed':
      return `Scan ${e.subject.id} ${e.kind.slice(5)}`;
    case 'host.discovered':
      return `New host ${e.subject.id}${d.fingerprint ? ` (${String(d.fingerprint)})` : ''}`;
    default:
      return `${e.kind} ${e.subject.type} ${e.subject.id}`;
  }
}

const finish = (t0: number, o: Omit<SendOutcome, 'durationMs'>): SendOutcome => ({ ...o, error: o.error === null ? null : redactText(o.error).slice(0, 1000), durationMs: Math.round(performance.now() - t0) });

/** decisions.md: a 4xx is final, except 408 and 429; a 5xx or no answer is retried. */
const retryableStatus = (s: number) => s >= 500 || s === 408 || s === 429;

/**
 * POSTs JSON. User info in the URL is sent as Basic authorization (fetch refuses URLs holding
 * credentials); no error text ever carries the URL, whose path or query may be a token.
 */
async function post(url: string, body: string, headers: Record<string, string>, opts: SendOptions): Promise<Omit<SendOutcome, 'durationMs'>> {
  const target = new URL(url);
  const auth: Record<string, string> = {};
  if (target.username || target.password) {
    auth.authorization = `Basic ${Buffer.from(`${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`).toString('base64')}`;
    target.username = '';
    target.password = '';
  }
  const scrub = (text: string) => text.split(url).join('<url>').split(target.href).join('<url>');
  try {
    const res = await fetch(target, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'user-agent': opts.userAgent, ...auth, ...headers },
      redirect: 'manual', // a redirect is an answer, not a place to re-send a signed body to
      signal: AbortSignal.timeout(opts.timeoutMs),
    });
    const text = (await res.text().catch(() => '')).slice(0, 300);
    if (res.status >= 200 && res.status < 300) return { ok: true, statusCode: res.status, error: null, retry: false };
    return { ok: false, statusCode: res.status, error: scrub(`HTTP ${res.status}${text ? `: ${text}` : ''}`), retry: retryableStatus(res.status) };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const why = e.name === 'TimeoutError' ? `no answer within ${opts.timeoutMs} ms` : (e.cause?.code ?? e.cause?.message ?? e.message);
    return { ok: false, statusCode: null, error: scrub(String(why)), retry: true };
  }
}

/** Sends one event to one destination. Never throws: the outcome says what happened. */
export async function send(dest: DestinationConfig, event: EventPayload, opts: SendOptions): Promise<SendOutcome> {
  const t0 = performance.now();
  if (dest.kind === 'webhook') {
    const body = JSON.stringify(event);
    const t = Math.floor(Date.now() / 1000);
    return finish(t0, await post(dest.config.url, body, { 'x-signature': signature(dest.config.secret, body, t), 'x-surveyor-event': event.kind, 'x-surveyor-event-id': event.id }, opts));
  }
  if (dest.kind === 'slack') {
    const icon = event.severity === 'critical' ? ':red_circle:' : event.severity === 'warning' ? ':warning:' : ':information_source:';
    const body = JSON.stringify({ text: `${icon} *${event.kind}* ${summary(event)}` });
    return finish(t0, await post(dest.config.url, body, {}, opts));
  }
  const c = dest.config;
  const transport = nodemailer.createTransport({
    host: c.host,
    port: c.port,
    secure: c.secure,
    requireTLS: c.requireTls,
    ...(c.username ? { auth: { user: c.username, pass: c.password ?? '' } } : {}),
    connectionTimeout: opts.timeoutMs,
    greetingTimeout: opts.timeoutMs,
    socketTimeout: opts.timeoutMs,
  });
  try {
    const info = await transport.sendMail({
      from: c.from,
      to: c.to,
      subject: `[Surveyor] ${event.severity}: ${summary(event)}`.slice(0, 250),
      text: `${summary(event)}\n\nEvent:    ${event.kind}\nSeverity: ${event.severity}\nAt:       ${event.occurredAt}\nSubject:  ${event.subject.type} ${event.subject.id}\n\n${JSON.stringify(event.data, null, 2)}\n\n${opts.baseUrl}\n`,
      headers: { 'X-Surveyor-Event': event.kind, 'X-Surveyor-Event-Id': event.id },
    });
    const code = Number(/^(\d{3})/.exec(String(info.response))?.[1] ?? 250);
    return finish(t0, { ok: true, statusCode: code, error: null, retry: false });
  } catch (err) {
    const e = err as Error & { responseCode?: number; code?: string };
    // SMTP 5xx is a permanent refusal (bad recipient, auth failed); 4xx and connection failures are temporary.
    const code = typeof e.responseCode === 'number' ? e.responseCode : null;
    return finish(t0, { ok: false, statusCode: code, error: e.message || e.code || 'SMTP failure', retry: code === null || code < 500 || e.code === 'ETIMEDOUT' });
  } finally {
    transport.close();
  }
}
