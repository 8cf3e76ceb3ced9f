import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'], { message: 'expected true or false' })
  .transform((v) => ['true', '1', 'yes', 'on'].includes(v));
/** Decimal digits only: a blank value, `0x50` or `1e3` is refused, never coerced. */
const int = (min: number, max: number) =>
  z.string().trim().regex(/^\d+$/, 'expected an integer').transform(Number).pipe(z.number().int().min(min).max(max));

/** Every environment variable the service reads, parsed once at start. Nothing else reads `process.env`. */
export const ConfigSchema = z
  .object({
    DATABASE_URL: z
      .url({ protocol: /^postgres(ql)?$/, message: 'expected postgres://user@host:port/database' })
      .optional()
      .describe('PostgreSQL connection string. Absent: the embedded PGlite database in SERVICE_DATA_DIR.'),
    SERVICE_DATA_DIR: z.string().min(1).default('./data').describe('Folder of the embedded database and of the generated secret key.'),
    SERVICE_HOST: z.string().min(1).default('127.0.0.1').describe('Address the web process listens on.'),
    SERVICE_PORT: int(0, 65535).default(8080).describe('Port the web process listens on (0 picks a free one).'),
    SERVICE_BASE_URL: z
      .url({ protocol: /^https?$/, message: 'expected an http(s) URL' })
      .optional()
      .describe('Public URL of the service, used in problem `type` links and to decide the `Secure` cookie flag. Default http://SERVICE_HOST:SERVICE_PORT.'),
    SERVICE_DB_POOL_MAX: int(1, 1000).default(25).describe('Connections in the query pool of each process.'),
    SERVICE_JOBS_IN_WEB: bool.default(true).describe('Whether the web process also runs the scheduled jobs.'),
    SERVICE_VERSION: z.string().min(1).default('0.1.0-dev').describe('Release reported by /api/health.'),
    SERVICE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('Log level of the JSON logs on stdout (secrets are always redacted).'),
    SERVICE_SECRET_KEY: z
      .string()
      .regex(/^(?:[0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=)$/, 'expected 32 bytes as 64 hex characters or base64')
      .optional()
      .describe('Key encrypting stored secrets (AES-256-GCM). Required with DATABASE_URL; on PGlite generated into SERVICE_DATA_DIR/secret.key when absent.'),
    SERVICE_RATE_LIMIT_KEY_PER_MINUTE: int(1, 1_000_000).default(1200).describe('Requests a minute per API key.'),
    SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: int(1, 1_000_000).default(600).describe('Requests a minute per daemon key.'),
    SERVICE_RATE_LIMIT_SCIM_PER_MINUTE: int(1, 1_000_000).default(600).describe('Requests a minute per SCIM token (the identity provider\'s pushes).'),
    SERVICE_RATE_LIMIT_ANON_PER_MINUTE: int(1, 1_000_000).default(300).describe('Requests a minute per client address without a valid credential.'),
    SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: int(1, 10_000).default(10).describe('Login attempts a minute per client address.'),
    SERVICE_SESSION_TTL_HOURS: int(1, 24 * 30).default(12).describe('Lifetime of a browser session.'),
    SERVICE_BODY_LIMIT_BYTES: int(1024, 256 * 1024 * 1024).default(4 * 1024 * 1024).describe('Largest request body accepted (413 above).'),
    SERVICE_INGEST_BODY_LIMIT_BYTES: int(1024, 1024 * 1024 * 1024).default(64 * 1024 * 1024).describe('Largest daemon observation or flow batch, after gzip decompression (413 above).'),
    SERVICE_DAEMON_HEARTBEAT_SECONDS: int(5, 3600).default(30).describe('Heartbeat interval handed to daemons at registration.'),
    SERVICE_DAEMON_POLL_TIMEOUT_SECONDS: int(1, 60).default(30).describe('Long-poll wait handed to daemons at registration (at most 60).'),
    SERVICE_SCAN_STALL_SECONDS: int(60, 7 * 86400).default(900).describe('A running scan session that received no batch for this long is marked stalled (job scan.stall).'),
    SERVICE_JOBS_SHUTDOWN_SECONDS: int(1, 3600).default(30).describe('At shutdown, how long running job ticks may take to finish.'),
    SERVICE_JOBS_TIME_SCALE: int(1, 3600).default(1).describe('Divides every job interval and retry wait (60: an hour of schedule in a minute). For tests and demonstrations; 1 in production.'),
    SERVICE_SSE_HEARTBEAT_SECONDS: int(1, 300).default(15).describe('Interval of the comment line on GET /api/sse that keeps idle connections open through proxies.'),
    SERVICE_SSE_MAX_BUFFER_BYTES: int(4096, 64 * 1024 * 1024).default(1024 * 1024).describe('Unread bytes an SSE client may fall behind before it is sent `event: overflow` and closed (it reconnects and resumes).'),
    SERVICE_CHANGE_LOG_RETENTION_DAYS: int(1, 3650)
      .default(7)
      .describe('Days the change log (the rows behind GET /api/sse) is kept; job events.prune deletes older rows. At least 1: a stream resumes with Last-Event-ID from the last 24 hours.'),
    SERVICE_EVENTS_RETENTION_DAYS: int(1, 3650)
      .default(90)
      .describe('Days events (the event log, GET /api/v1/admin/events) are kept; an event stays while a delivery of it is kept (pending, or within SERVICE_DELIVERIES_RETENTION_DAYS).'),
    SERVICE_DELIVERIES_RETENTION_DAYS: int(1, 3650)
      .default(30)
      .describe('Days a delivered or dead alert delivery (with its attempts) is kept after its last attempt; a pending one is kept until it is delivered or dead.'),
    SERVICE_NOTIFY_PRIVATE_TARGETS: z
      .enum(['allow', 'deny'])
      .default('allow')
      .describe('deny: alert destinations (webhook, Slack, SMTP) that resolve to loopback, private or link-local addresses are refused, so an organisation\'s admin cannot reach the network the service runs in. Set it where organisations do not trust each other.'),
    SERVICE_CLOUD_IN_CLUSTER: z
      .enum(['allow', 'deny'])
      .default('deny')
      .describe('allow: a Kubernetes cloud account may read the cluster this service runs in with the service\'s own service account (in-cluster), without a kubeconfig. For a deployment of one organisation (or organisations that trust each other): any organisation\'s admin could then read that cluster.'),
    SERVICE_NOTIFY_TIMEOUT_SECONDS: int(1, 120).default(10).describe('How long one alert delivery (webhook, Slack, SMTP) may take before the attempt counts as failed.'),
    SERVICE_CORS_ORIGINS: z
      .string()
      .default('')
      .superRefine((v, ctx) => {
        for (const o of listOf(v)) {
          if (!isExactOrigin(o)) ctx.addIssue({ code: 'custom', message: `expected exact origins like https://dash.example.com (scheme, host, optional port; no path, no *), got ${JSON.stringify(o)}` });
        }
      })
      .describe('Comma-separated origins (https://dash.example.com) whose pages may call the API from the browser (CORS), cookies included. Empty: CORS off, no cross-origin page may read an answer.'),
    SERVICE_ADVISORY_FEED_URL: z
      .url({ protocol: /^(https?|file)$/, message: 'expected an http(s) or file:// URL' })
      .optional()
      .describe('Advisory feed the job cve.match pulls before matching: the NVD CVE API 2.0 (https://services.nvd.nist.gov/rest/json/cves/2.0, paged, increments by lastModified), the URL of a JSON or gzip file (NVD API 2.0 page or OSV records), fetched with If-None-Match / If-Modified-Since, a zip of OSV records (an OSV ecosystem\'s all.zip), or an offline mirror: a file:// path of such a file or of a directory of JSON and gzip files (read recursively: NVD records one per file, the NVD JSON mirror releases\' cve_items files, OSV records one per file). Absent: advisories come from `surveyor advisories import` and the console only.'),
    SERVICE_ADVISORY_FEED_API_KEY: z.string().min(1).optional().describe('Sent as the `apiKey` header to the feed (an NVD API key raises its rate limit). Never logged.'),
    SERVICE_ADVISORY_FEED_TIMEOUT_SECONDS: int(1, 600).default(60).describe('How long one feed request may take.'),
    SERVICE_ADVISORY_FEED_PAGE_DELAY_MS: int(0, 60_000)
      .optional()
      .describe('Pause between NVD API pages. Default 6000 without an API key and 600 with one (NVD\'s published rate limits).'),
    SERVICE_ADVISORY_UPLOAD: z
      .enum(['allow', 'deny'])
      .default('allow')
      .describe('deny: POST /api/v1/admin/advisories/import is refused (403) and advisories come only from the feed and `surveyor advisories import`. The mirror is shared by every organisation, so set it where organisations do not trust each other.'),
    SERVICE_AI_BASE_URL: z
      .url({ protocol: /^https?$/, message: 'expected an http(s) URL' })
      .optional()
      .describe('OpenAI-compatible chat-completions API of the assistant (https://api.openai.com/v1, an Azure OpenAI deployment\'s /openai/v1, a local Ollama http://127.0.0.1:11434/v1 or vLLM). Absent: POST /api/v1/ai/chat is 503.'),
    SERVICE_AI_API_KEY: z.string().min(1).optional().describe('The provider\'s API key, sent as a bearer token (a local server may need none). Never logged.'),
    SERVICE_AI_MODEL: z.string().min(1).max(200).optional().describe('The model the assistant asks (it must support tool calls), for example gpt-4o-mini or llama3.1.'),
    SERVICE_AI_TIMEOUT_SECONDS: int(1, 600).default(60).describe('How long one provider call may take before the answer is 504 upstream_timeout.'),
    SERVICE_AI_MAX_TOOL_ROUNDS: int(1, 20).default(6).describe('Most tool rounds one question may take before the assistant must answer.'),
    SERVICE_AI_TURNS_RETENTION_DAYS: int(1, 3650).default(90).describe('Days the record of each question to the assistant (who asked, outcome, tokens; never its text) is kept; job assistant.prune deletes older ones. The counter service_ai_turns_total keeps counting them.'),
    SERVICE_CONSOLE_DIR: z
      .string()
      .min(1)
      .optional()
      .describe('Folder of the built web console (index.html and assets/), served at /. Default: packages/web/dist of this installation, built by npm install.'),
    SERVICE_TRUST_PROXY: z.string().default('false').describe('Fastify trustProxy: false, true, a hop count, or a comma-separated list of proxy addresses. Decides the client address used by rate limits.'),
  })
  .transform((e) => ({
    databaseUrl: e.DATABASE_URL,
    dataDir: e.SERVICE_DATA_DIR,
    host: e.SERVICE_HOST,
    port: e.SERVICE_PORT,
    baseUrl: (e.SERVICE_BASE_URL ?? `http://${e.SERVICE_HOST.includes(':') ? `[${e.SERVICE_HOST}]` : e.SERVICE_HOST}:${e.SERVICE_PORT}`).replace(/\/+$/, ''),
    dbPoolMax: e.SERVICE_DB_POOL_MAX,
    jobsInWeb: e.SERVICE_JOBS_IN_WEB,
    version: e.SERVICE_VERSION,
    logLevel: e.SERVICE_LOG_LEVEL,
    secretKey: e.SERVICE_SECRET_KEY,
    rateLimits: {
      keyPerMinute: e.SERVICE_RATE_LIMIT_KEY_PER_MINUTE,
      daemonPerMinute: e.SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE,
      scimPerMinute: e.SERVICE_RATE_LIMIT_SCIM_PER_MINUTE,
      anonPerMinute: e.SERVICE_RATE_LIMIT_ANON_PER_MINUTE,
      loginPerMinute: e.SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE,
    },
    sessionTtlHours: e.SERVICE_SESSION_TTL_HOURS,
    bodyLimitBytes: e.SERVICE_BODY_LIMIT_BYTES,
    ingestBodyLimitBytes: e.SERVICE_INGEST_BODY_LIMIT_BYTES,
    trustProxy: parseTrustProxy(e.SERVICE_TRUST_PROXY),
    corsOrigins: listOf(e.SERVICE_CORS_ORIGINS),
    daemon: { heartbeatSeconds: e.SERVICE_DAEMON_HEARTBEAT_SECONDS, pollTimeoutSeconds: e.SERVICE_DAEMON_POLL_TIMEOUT_SECONDS },
    jobs: { scanStallSeconds: e.SERVICE_SCAN_STALL_SECONDS, shutdownSeconds: e.SERVICE_JOBS_SHUTDOWN_SECONDS, timeScale: e.SERVICE_JOBS_TIME_SCALE },
    sse: { heartbeatMs: e.SERVICE_SSE_HEARTBEAT_SECONDS * 1000, maxBufferBytes: e.SERVICE_SSE_MAX_BUFFER_BYTES },
    retention: { changeLogDays: e.SERVICE_CHANGE_LOG_RETENTION_DAYS, eventsDays: e.SERVICE_EVENTS_RETENTION_DAYS, deliveriesDays: e.SERVICE_DELIVERIES_RETENTION_DAYS },
    advisoryFeed: e.SERVICE_ADVISORY_FEED_URL
      ? {
          url: e.SERVICE_ADVISORY_FEED_URL,
          apiKey: e.SERVICE_ADVISORY_FEED_API_KEY,
          timeoutMs: e.SERVICE_ADVISORY_FEED_TIMEOUT_SECONDS * 1000,
          pageDelayMs: e.SERVICE_ADVISORY_FEED_PAGE_DELAY_MS ?? (e.SERVICE_ADVISORY_FEED_API_KEY ? 600 : 6000),
        }
      : null,
    advisoryUpload: e.SERVICE_ADVISORY_UPLOAD === 'allow',
    consoleDir: e.SERVICE_CONSOLE_DIR,
    notify: { timeoutMs: e.SERVICE_NOTIFY_TIMEOUT_SECONDS * 1000, allowPrivate: e.SERVICE_NOTIFY_PRIVATE_TARGETS === 'allow' },
    cloud: { allowInCluster: e.SERVICE_CLOUD_IN_CLUSTER === 'allow' },
    ai: {
      provider: e.SERVICE_AI_BASE_URL && e.SERVICE_AI_MODEL ? { baseUrl: e.SERVICE_AI_BASE_URL, apiKey: e.SERVICE_AI_API_KEY, model: e.SERVICE_AI_MODEL } : null,
      timeoutMs: e.SERVICE_AI_TIMEOUT_SECONDS * 1000,
      maxToolRounds: e.SERVICE_AI_MAX_TOOL_ROUNDS,
      turnsRetentionDays: e.SERVICE_AI_TURNS_RETENTION_DAYS,
    },
  }));

export type Config = z.output<typeof ConfigSchema>;

/** A comma-separated list, blanks dropped. */
function listOf(v: string): string[] {
  return v.split(',').map((s) => s.trim()).filter(Boolean);
}

/** `https://host[:port]` exactly as a browser sends it in `Origin` (no path, no trailing slash, no wildcard). */
function isExactOrigin(o: string): boolean {
  try {
    const u = new URL(o);
    return /^https?:$/.test(u.protocol) && u.origin === o && !o.includes('*');
  } catch {
    return false;
  }
}

function parseTrustProxy(v: string): boolean | number | string[] {
  if (v === 'true') return true;
  if (v === 'false' || v === '') return false;
  if (/^\d+$/.test(v)) return Number(v);
  return v.split(',').map((s) => s.trim()).filter(Boolean);
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment. Throws ConfigError naming each bad variable; an empty string counts as unset. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const known = Object.keys(ConfigSchema.in.shape);
  const input = Object.fromEntries(known.map((k) => [k, env[k] === '' ? undefined : env[k]]));
  const result = ConfigSchema.safeParse(input);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((i) => `${String(i.path[0] ?? '?')}: ${i.message}`));
  }
  return result.data;
}

/** Name, default and description of every variable, for `surveyor config` and the README. */
export function describeConfig(): { name: string; default: unknown; description: string }[] {
  return Object.entries(ConfigSchema.in.shape).map(([name, schema]) => {
    const s = schema as z.ZodType;
    const parsed = s.safeParse(undefined);
    return { name, default: parsed.success ? parsed.data : undefined, description: s.description ?? '' };
  });
}
