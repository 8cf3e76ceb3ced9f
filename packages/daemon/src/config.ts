import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { parseCidr } from '@surveyor/contract';

/** What the daemon runs with: command line over config file over defaults. */
export interface DaemonConfig {
  server: string;
  key: string;
  site?: string;
  name: string;
  stateDir: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** The nmap executable: a path, or a name looked up on PATH; null disables nmap. */
  nmap: string | null;
  /**
   * nmap's OS detection (`-O --osscan-limit`): the host's operating system and hardware CPEs
   * (`o`/`h`), which NVD's AND configurations ask for. It needs raw sockets: on by default when
   * the daemon runs as root; as another user, on only when asked (nmap then gets `--privileged`,
   * which needs CAP_NET_RAW and CAP_NET_ADMIN on the nmap binary or the container).
   */
  nmapOs: boolean;
  /** LLDP/CDP neighbours from a running lldpd through lldpcli (its control socket: lldpd's default when absent); null: never asked. */
  lldp: { lldpcli: string; socket?: string } | null;
  /** The NetFlow v9 / IPFIX collector: where it listens, its buffer size (buckets), how often it delivers; null: off. */
  flows: { listen: string; maxBuckets: number; flushSeconds: number } | null;
  /** Extra networks reported at registration besides those of the host's interfaces. */
  networks: string[];
  scan: {
    /** Sockets open at once during a scan. */
    concurrency: number;
    connectTimeoutMs: number;
    /** Largest address range swept address by address; wider IPv6 ranges use the neighbour table. */
    maxSweepAddresses: number;
    /** Hosts per observation batch. */
    batchHosts: number;
  };
}

export const HELP = `Usage: surveyor-daemon --server URL --key DAEMON_KEY [--site CODE] [options]

The Surveyor daemon: registers with the control plane, heartbeats, takes scan jobs for its site's
networks, scans them (its own TCP connect scan, or nmap when the job asks and nmap is installed)
and streams what it found as observation batches. It only ever connects out to the server.

Options:
  --server URL        Control plane base URL, for example https://surveyor.example.com
  --key KEY           Daemon key (enrolment shows it once); or env SURVEYOR_DAEMON_KEY, or keyFile in --config
  --site CODE         Site this daemon belongs to (binds on first registration only)
  --name NAME         Daemon name, unique in the organisation (default: the host name)
  --config FILE       JSON config file; command-line options win over it
  --state DIR         State folder keeping the daemon id (default: $STATE_DIRECTORY or /var/lib/surveyor-daemon)
  --nmap PATH         nmap executable (default: nmap on PATH); --no-nmap never runs it
  --nmap-os           nmap's OS detection (-O) for the hosts' OS and hardware CPEs (default: on as
                      root); --no-nmap-os never asks for it
  --lldp-socket PATH  lldpd's control socket for lldpcli (default: lldpd's own); --no-lldp never asks lldpd
  --flows HOST:PORT   Collect NetFlow v9 and IPFIX on this UDP address (for example 0.0.0.0:2055)
  --network CIDR      Also report this network at registration (repeatable)
  --log-level LEVEL   debug, info (default), warn or error; logs are JSON lines on stdout
  --once              Take one scan job, run it, exit (0 when it completed)
  --version           Print the version and exit
  --help              Print this help and exit
`;

export class ConfigError extends Error {}

const CidrText = z.string().refine((s) => parseCidr(s)?.hostBitsZero === true, 'expected a CIDR with zero host bits, such as 10.0.0.0/24');

const FileConfig = z.strictObject({
  server: z.string().url().optional(),
  key: z.string().min(1).optional(),
  keyFile: z.string().min(1).optional(),
  site: z.string().min(1).max(100).optional(),
  name: z.string().min(1).max(200).optional(),
  stateDir: z.string().min(1).optional(),
  logLevel: z.enum(['debug', 'info', 'warn', 'error']).optional(),
  nmap: z.union([z.string().min(1), z.literal(false)]).optional(),
  nmapOs: z.boolean().optional(),
  networks: z.array(CidrText).optional(),
  lldp: z.union([z.literal(false), z.strictObject({ lldpcli: z.string().min(1).optional(), socket: z.string().min(1).optional() })]).optional(),
  flows: z
    .strictObject({
      listen: z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[0-9.]+|):\d{1,5}$/, 'expected HOST:PORT, an IPv6 host in brackets'),
      maxBuckets: z.number().int().min(1).max(200_000).optional(),
      flushSeconds: z.number().int().min(1).max(3600).optional(),
    })
    .optional(),
  scan: z
    .strictObject({
      concurrency: z.number().int().min(1).max(4096).optional(),
      connectTimeoutMs: z.number().int().min(50).max(60_000).optional(),
      maxSweepAddresses: z.number().int().min(1).max(1_048_576).optional(),
      batchHosts: z.number().int().min(1).max(1000).optional(),
    })
    .optional(),
});

export interface CliResult {
  config?: DaemonConfig;
  once: boolean;
  help: boolean;
  version: boolean;
}

/** Parses the command line (and the config file it names); throws ConfigError with a readable message. */
export function parseCommandLine(argv: string[], env: NodeJS.ProcessEnv = process.env): CliResult {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        server: { type: 'string' },
        key: { type: 'string' },
        site: { type: 'string' },
        name: { type: 'string' },
        config: { type: 'string' },
        state: { type: 'string' },
        nmap: { type: 'string' },
        'no-nmap': { type: 'boolean' },
        'nmap-os': { type: 'boolean' },
        'no-nmap-os': { type: 'boolean' },
        'lldp-socket': { type: 'string' },
        flows: { type: 'string' },
        'no-lldp': { type: 'boolean' },
        network: { type: 'string', multiple: true },
        'log-level': { type: 'string' },
        once: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
    });
  } catch (e) {
    throw new ConfigError(`${(e as Error).message}\nRun surveyor-daemon --help for the options.`);
  }
  const v = parsed.values;
  const flags = { once: v.once === true, help: v.help === true, version: v.version === true };
  if (flags.help || flags.version) return flags;

  let file: z.infer<typeof FileConfig> = {};
  if (v.config) {
    let text: string;
    try {
      text = readFileSync(v.config, 'utf8');
    } catch (e) {
      throw new ConfigError(`Cannot read the config file ${v.config}: ${(e as Error).message}`);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (e) {
      throw new ConfigError(`The config file ${v.config} is not JSON: ${(e as Error).message}`);
    }
    const r = FileConfig.safeParse(json);
    if (!r.success) throw new ConfigError(`The config file ${v.config} is invalid: ${r.error.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`).join('; ')}`);
    file = r.data;
  }

  const server = v.server ?? file.server;
  if (!server) throw new ConfigError('--server URL is required (or "server" in --config).');
  if (!z.string().url().safeParse(server).success || !/^https?:\/\//.test(server)) throw new ConfigError(`--server must be an http(s) URL, got ${server}`);
  let key = v.key ?? file.key ?? env.SURVEYOR_DAEMON_KEY;
  if (!key && file.keyFile) {
    try {
      key = readFileSync(file.keyFile, 'utf8').trim();
    } catch (e) {
      throw new ConfigError(`Cannot read the key file ${file.keyFile}: ${(e as Error).message}`);
    }
  }
  if (!key) throw new ConfigError('--key DAEMON_KEY is required (or SURVEYOR_DAEMON_KEY, or "key"/"keyFile" in --config).');
  const logLevel = (v['log-level'] ?? file.logLevel ?? 'info') as DaemonConfig['logLevel'];
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel)) throw new ConfigError(`--log-level must be debug, info, warn or error, got ${logLevel}`);
  const networks = [...(file.networks ?? []), ...(v.network ?? [])];
  for (const n of networks) if (!CidrText.safeParse(n).success) throw new ConfigError(`--network ${n} is not a CIDR with zero host bits`);
  const site = v.site ?? file.site;
  return {
    ...flags,
    config: {
      server: server.replace(/\/+$/, ''),
      key,
      ...(site ? { site } : {}),
      name: v.name ?? file.name ?? hostname(),
      stateDir: v.state ?? file.stateDir ?? env.STATE_DIRECTORY?.split(':')[0] ?? '/var/lib/surveyor-daemon',
      logLevel,
      nmap: v['no-nmap'] ? null : (v.nmap ?? (file.nmap === false ? null : (file.nmap ?? 'nmap'))),
      nmapOs: v['no-nmap-os'] ? false : (v['nmap-os'] ?? file.nmapOs ?? process.getuid?.() === 0),
      flows: flowsConfig(v.flows, file.flows),
      lldp: lldpConfig(v['no-lldp'] === true, v['lldp-socket'], file.lldp),
      networks,
      scan: {
        concurrency: file.scan?.concurrency ?? 256,
        connectTimeoutMs: file.scan?.connectTimeoutMs ?? 1500,
        maxSweepAddresses: file.scan?.maxSweepAddresses ?? 65_536,
        batchHosts: file.scan?.batchHosts ?? 16,
      },
    },
  };
}

function lldpConfig(off: boolean, socket: string | undefined, file: false | { lldpcli?: string; socket?: string } | undefined): DaemonConfig['lldp'] {
  if (off || (file === false && !socket)) return null;
  const sock = socket ?? (file ? file.socket : undefined);
  return { lldpcli: (file ? file.lldpcli : undefined) ?? 'lldpcli', ...(sock ? { socket: sock } : {}) };
}

function flowsConfig(listen: string | undefined, file: { listen: string; maxBuckets?: number; flushSeconds?: number } | undefined): DaemonConfig['flows'] {
  const at = listen ?? file?.listen;
  if (!at) return null;
  if (!/^(\[[0-9a-fA-F:.]+\]|[0-9.]+|):\d{1,5}$/.test(at)) throw new ConfigError(`--flows must be HOST:PORT (an IPv6 host in brackets), got ${at}`);
  return { listen: at, maxBuckets: file?.maxBuckets ?? 100_000, flushSeconds: file?.flushSeconds ?? 60 };
}
