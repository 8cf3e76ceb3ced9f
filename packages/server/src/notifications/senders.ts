import { createHmac } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import type { Agent } from 'undici';
import type { Config } from '../config.js';
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
  /** False (SERVICE_NOTIFY_PRIVATE_TARGETS=deny): refuse destinations that resolve to loopback, private or link-local addresses. */
  allowPrivate: boolean;
}

/** How this deployment sends alerts (the job and the admin test endpoint alike). */
export function sendOptions(config: Pick<Config, 'baseUrl' | 'notify'>): SendOptions {
  return { timeoutMs: config.notify.timeoutMs, allowPrivate: config.notify.allowPrivate, baseUrl: config.baseUrl, userAgent: 'Surveyor-Notifications/1' };
}

/** Loopback, private, link-local, CGNAT, unspecified and unique-local ranges: inside the network the service runs in. */
const PRIVATE = new BlockList();
for (const [net, bits] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.168.0.0', 16]] as const) PRIVATE.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10]] as const) PRIVATE.addSubnet(net, bits, 'ipv6');

export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return PRIVATE.check(mapped, 'ipv4');
  const family = isIP(address);
  return family === 0 ? true : PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

class PrivateTargetError extends Error {
  readonly code = 'EPRIVATETARGET';
  constructor(host: string, address: string) {
    super(`${host} resolves to ${address}, a private or loopback address (SERVICE_NOTIFY_PRIVATE_TARGETS=deny)`);
  }
}

/** Resolves `host` to one address, refusing a private one unless allowed. */
async function resolveTarget(host: string, allowPrivate: boolean): Promise<{ address: string; family: number }> {
  const bare = host.replace(/^\[|\]$/g, '');
  const found = isIP(bare) ? { address: bare, family: isIP(bare) } : await lookup(bare);
  if (!allowPrivate && isPrivateAddress(found.address)) throw new PrivateTargetError(bare, found.address);
  return found;
}

/**
 * The HTTP client of deliveries: connections go to the address checked at connect time (no
 * second, unchecked DNS answer), refusing private ones when so configured.
 */
const agents = new Map<boolean, Agent>();
function agentFor(AgentClass: typeof Agent, allowPrivate: boolean): Agent {
  let a = agents.get(allowPrivate);
  if (!a) {
    a = new AgentClass({
      connect: {
        lookup: (hostname, _options, callback) => {
          resolveTarget(hostname, allowPrivate).then(
            (r) => callback(null, r.address, r.family),
            (err: Error) => callback(err as NodeJS.ErrnoException, '', 0),
          );
        },
      },
    });
    agents.set(allowPrivate, a);
  }
  return a;
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
      return d.status === 'degraded' ? `Daemon ${name} is back, degraded${d.reason ? `: ${String(d.reason)}` : ''}` : `Daemon ${name} is back online`;
    case 'vulnerability.opened':
      return `${String(d.severity)} vulnerability ${String(d.cveId)} opened${d.summary ? `: ${String(d.summary)}` : ''}`;
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

/** Slack's control characters, so that text from the network or a feed cannot mention @channel or hide a link. */
const slackEscape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const finish = (t0: number, o: Omit<SendOutcome, 'durationMs'>): SendOutcome => ({ ...o, error: o.error === null ? null : redactText(o.error).slice(0, 1000), durationMs: Math.round(performance.now() - t0) });

/** decisions.md: a 4xx is final, except 408 and 429; anything else that is not a success (5xx, a redirect) is retried. */
const retryableStatus = (s: number) => !(s >= 400 && s < 500) || s === 408 || s === 429;

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
  // A name is checked when the connection resolves it (the agent's lookup); an address literal never is.
  const literal = target.hostname.replace(/^\[|\]$/g, '');
  if (!opts.allowPrivate && isIP(literal) && isPrivateAddress(literal)) return { ok: false, statusCode: null, error: new PrivateTargetError(literal, literal).message, retry: false };
  try {
    // Loaded with the first webhook (3 MB of heap a web process need not carry, and mark at each collection, without one).
    const undici = await import('undici');
    const res = await undici.fetch(target, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'user-agent': opts.userAgent, ...auth, ...headers },
      redirect: 'manual', // a redirect is an answer, not a place to re-send a signed body to
      signal: AbortSignal.timeout(opts.timeoutMs),
      dispatcher: agentFor(undici.Agent, opts.allowPrivate),
    });
    // The answer's body is not kept: the status says what happened, and a body read back to the
    // organisation's admins would let them read services the server can reach.
    await res.body?.cancel().catch(() => {});
    if (res.status >= 200 && res.status < 300) return { ok: true, statusCode: res.status, error: null, retry: false };
    return { ok: false, statusCode: res.status, error: `HTTP ${res.status}`, retry: retryableStatus(res.status) };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    if (e.cause instanceof PrivateTargetError) return { ok: false, statusCode: null, error: scrub(e.cause.message), retry: false };
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
    const body = JSON.stringify({ text: `${icon} *${event.kind}* ${slackEscape(summary(event))}` });
    return finish(t0, await post(dest.config.url, body, {}, opts));
  }
  const c = dest.config;
  let address: string;
  try {
    address = (await resolveTarget(c.host, opts.allowPrivate)).address;
  } catch (err) {
    const e = err as Error & { code?: string };
    return finish(t0, { ok: false, statusCode: null, error: e.message || e.code || 'cannot resolve the SMTP host', retry: !(err instanceof PrivateTargetError) });
  }
  // Loaded on the first mail, not at start-up (issue 30: a web process's heap is marked at every full collection).
  const { default: nodemailer } = await import('nodemailer');
  const transport = nodemailer.createTransport({
    // Connect to the address checked above; TLS still verifies the name.
    host: address,
    ...(isIP(c.host) ? {} : { servername: c.host }),
    port: c.port,
    secure: c.secure,
    requireTLS: c.requireTls,
    ...(c.username ? { auth: { user: c.username, pass: c.password ?? '' } } : {}),
    connectionTimeout: opts.timeoutMs,
    greetingTimeout: opts.timeoutMs,
    socketTimeout: opts.timeoutMs,
  });
  // One deadline for the whole exchange (nodemailer's timeouts are per step, and idle-based).
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      transport.close();
      reject(Object.assign(new Error(`no answer within ${opts.timeoutMs} ms`), { code: 'ETIMEDOUT' }));
    }, opts.timeoutMs);
  });
  try {
    const info = await Promise.race([deadline, transport.sendMail({
      from: c.from,
      to: c.to,
      subject: `[Surveyor] ${event.severity}: ${summary(event)}`.slice(0, 250),
      text: `${summary(event)}\n\nEvent:    ${event.kind}\nSeverity: ${event.severity}\nAt:       ${event.occurredAt}\nSubject:  ${event.subject.type} ${event.subject.id}\n\n${JSON.stringify(event.data, null, 2)}\n\n${opts.baseUrl}\n`,
      headers: { 'X-Surveyor-Event': event.kind, 'X-Surveyor-Event-Id': event.id },
    })]);
    const code = Number(/^(\d{3})/.exec(String(info.response))?.[1] ?? 250);
    return finish(t0, { ok: true, statusCode: code, error: null, retry: false });
  } catch (err) {
    const e = err as Error & { responseCode?: number; code?: string };
    // SMTP 5xx is a permanent refusal (bad recipient, auth failed); 4xx and connection failures are temporary.
    const code = typeof e.responseCode === 'number' ? e.responseCode : null;
    return finish(t0, { ok: false, statusCode: code, error: e.message || e.code || 'SMTP failure', retry: code === null || code < 500 });
  } finally {
    clearTimeout(timer);
    transport.close();
  }
}
