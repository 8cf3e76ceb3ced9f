import { randomUUID } from 'node:crypto';
import { type NetworkJob, type PollResponse, routes } from '@surveyor/contract';
import type { z } from 'zod';
import type { DaemonConfig } from './config.js';
import { ProblemError, ServerClient, StoppedError, backoffMs, sleep } from './http.js';
import type { Logger } from './log.js';
import { type Batch, ScanCancelled, runNetworkScan } from './scan/scanner.js';
import { FlowBuffer, FlowCollector } from './flows/collector.js';
import { lldpcli } from './scan/lldp.js';
import { localFingerprint } from './scan/local.js';
import { CORE_SIGNATURE_COUNT } from './scan/signatures.js';
import { StateStore } from './state.js';
import { daemonVersion, findExecutable, interfaceNetworks, osInfo } from './system.js';

type Job = z.output<typeof NetworkJob>;

/** A refusal that restarting will not cure (a revoked key): the daemon exits. */
export class FatalError extends Error {}

export interface Capabilities {
  nmap: boolean;
  netflow: boolean;
  ebpf: boolean;
  lldp: boolean;
  tcpConnect: boolean;
  tls: boolean;
}

interface Running {
  job: Job;
  abort: AbortController;
  /** Why it was aborted: a cancel job, or the daemon stopping. */
  reason?: 'cancelled' | 'stopping';
}

/**
 * The daemon: registers (idempotent by name, a new bootId each start, the id kept in the state
 * folder), heartbeats on the interval the server hands back, long-polls for jobs while it scans (so
 * a cancel reaches a running scan), and runs network jobs one at a time, streaming their batches.
 */
export class Daemon {
  readonly bootId = randomUUID();
  readonly version = daemonVersion();
  capabilities: Capabilities;
  readonly nmapPath: string | null;
  private readonly stopper = new AbortController();
  private readonly localFingerprint = localFingerprint();
  private lldp: { lldpcli: string; socket?: string } | undefined;
  private collector: FlowCollector | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly client: ServerClient;
  private readonly state: StateStore;
  private readonly problems = new Map<string, string>();
  private heartbeatSeconds = 30;
  private pollSeconds = 30;
  private queue: Job[] = [];
  private running: Running | undefined;
  private wake: (() => void) | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private registering: Promise<void> | undefined;
  /** In --once mode: the outcome of the one scan. */
  private onceResult: 'completed' | 'cancelled' | 'failed' | undefined;

  constructor(
    readonly config: DaemonConfig,
    private readonly log: Logger,
    private readonly opts: { once?: boolean } = {},
  ) {
    this.client = new ServerClient(config.server, config.key, log, this.stopper.signal, `surveyor-daemon/${this.version}`);
    this.state = new StateStore(config.stateDir);
    this.nmapPath = config.nmap ? findExecutable(config.nmap) : null;
    if (config.nmap && config.nmap !== 'nmap' && !this.nmapPath) this.problems.set('nmap', `nmap not found at ${config.nmap}`);
    // Truthful capabilities: nmap when an nmap is executable here; lldp once lldpd answers and netflow once the collector listens (run()); no eBPF.
    this.capabilities = { nmap: this.nmapPath !== null, netflow: false, ebpf: false, lldp: false, tcpConnect: true, tls: true };
  }

  get daemonId(): string | undefined {
    return this.client.daemonId;
  }

  get stopped(): boolean {
    return this.stopper.signal.aborted;
  }

  /** Runs until stop() (or, with --once, until one scan ends). Resolves to the exit code. */
  async run(): Promise<number> {
    try {
      await this.detectLldp();
      await this.startCollector();
      await this.register();
      await this.heartbeat();
      this.scheduleHeartbeat();
      this.scheduleFlush();
      const scans = this.scanLoop();
      await Promise.all([this.pollLoop(), scans]);
      if (this.opts.once) return this.onceResult === 'completed' ? 0 : 1;
      return 0;
    } catch (e) {
      if (e instanceof StoppedError) return this.opts.once && this.onceResult !== 'completed' ? 1 : 0;
      throw e;
    } finally {
      this.stop();
    }
  }

  /** LLDP is a capability when lldpd answers lldpcli; a socket named in the config that does not answer is a problem. */
  private async detectLldp(): Promise<void> {
    const lldp = this.config.lldp;
    if (!lldp) return;
    const exe = findExecutable(lldp.lldpcli);
    const ok = exe !== null && (await lldpcli(exe, lldp.socket, ['show', 'chassis']).then(() => true, () => false));
    this.capabilities = { ...this.capabilities, lldp: ok };
    if (ok) this.lldp = { lldpcli: exe!, ...(lldp.socket ? { socket: lldp.socket } : {}) };
    else if (lldp.socket) this.problems.set('lldp', `lldpd does not answer on ${lldp.socket}`);
  }

  /** The flow collector: `netflow` is a capability once it listens; a collector that cannot bind is a problem. */
  private async startCollector(): Promise<void> {
    const flows = this.config.flows;
    if (!flows) return;
    const collector = new FlowCollector(new FlowBuffer(flows.maxBuckets));
    try {
      const at = await collector.listen(flows.listen);
      this.collector = collector;
      this.capabilities = { ...this.capabilities, netflow: true };
      this.log.info('flow collector listening (NetFlow v9, IPFIX)', at);
    } catch (e) {
      collector.close();
      this.problems.set('flows', `flow collector cannot listen on ${flows.listen}: ${(e as Error).message}`);
    }
  }

  private scheduleFlush(): void {
    if (this.stopped || !this.collector || !this.config.flows) return;
    this.flushTimer = setTimeout(() => void this.flushFlows().finally(() => this.scheduleFlush()), this.config.flows.flushSeconds * 1000);
    this.flushTimer.unref?.();
  }

  /** Delivers the buffered buckets (and how many were dropped); a failed delivery goes back into the buffer. */
  async flushFlows(): Promise<void> {
    const collector = this.collector;
    if (!collector) return;
    const batch = collector.buffer.take();
    if (batch.flows.length === 0 && batch.dropped === 0) return;
    try {
      const res = await this.client.call(routes.daemonFlows, { body: batch }, { retryForMs: (this.config.flows?.flushSeconds ?? 60) * 1000, timeoutMs: 60_000 });
      this.log.debug('flows delivered', { flows: batch.flows.length, dropped: batch.dropped, accepted: res?.accepted });
    } catch (e) {
      collector.buffer.restore(batch);
      if (!(e instanceof StoppedError)) this.log.warn('flow delivery failed; kept for the next one', { flows: batch.flows.length, error: e instanceof ProblemError ? { status: e.status, code: e.code } : e });
    }
  }

  /** Stops: no further calls; a running scan is abandoned without its final batch (the server marks it stalled). */
  stop(): void {
    if (this.stopper.signal.aborted) return;
    this.stopper.abort();
    clearTimeout(this.heartbeatTimer);
    clearTimeout(this.flushTimer);
    this.collector?.close();
    if (this.running) {
      this.running.reason = 'stopping';
      this.running.abort.abort();
    }
    this.wake?.();
  }

  private async register(): Promise<void> {
    // Concurrent callers (a heartbeat and a poll both told 404) share one registration.
    this.registering ??= this.doRegister().finally(() => (this.registering = undefined));
    return this.registering;
  }

  private async doRegister(): Promise<void> {
    let saved: ReturnType<StateStore['load']> = {};
    try {
      saved = this.state.load();
    } catch (e) {
      this.log.error('the state file is unreadable; registering by name (the server keeps the identity)', { file: this.state.file, error: e });
    }
    const body = {
      name: this.config.name,
      version: this.version,
      ...osInfo(),
      capabilities: { ...this.capabilities },
      networkCidrs: [...new Set([...interfaceNetworks(), ...this.config.networks])],
      bootId: this.bootId,
      ...(this.config.site ? { siteCode: this.config.site } : {}),
      metadata: { nmapPath: this.nmapPath, node: process.version, previousDaemonId: saved.daemonId ?? null },
    };
    this.client.daemonId = undefined;
    let res;
    try {
      res = await this.client.call(routes.daemonRegister, { body });
    } catch (e) {
      if (e instanceof ProblemError && (e.status === 401 || e.status === 403)) throw new FatalError(`the server refused the daemon key (${e.status} ${e.code ?? ''}): enrol the daemon again for a new key`);
      throw e;
    }
    if (!res) throw new Error('register: empty answer');
    this.client.daemonId = res.daemonId;
    this.heartbeatSeconds = Math.max(1, res.config.heartbeatIntervalSeconds);
    this.pollSeconds = Math.min(60, Math.max(1, res.config.jobPollTimeoutSeconds));
    if (saved.daemonId && saved.daemonId !== res.daemonId) this.log.warn('the server gave this daemon a new id (it was removed, or the name changed)', { previous: saved.daemonId, daemonId: res.daemonId });
    try {
      this.state.save({ daemonId: res.daemonId, name: this.config.name, server: this.config.server, registeredAt: new Date().toISOString() });
      this.problems.delete('state');
    } catch (e) {
      this.problems.set('state', `state folder ${this.config.stateDir} not writable: ${(e as Error).message}`);
    }
    this.log.info('registered', { daemonId: res.daemonId, name: this.config.name, bootId: this.bootId, site: this.config.site ?? null, capabilities: this.capabilities, heartbeatIntervalSeconds: this.heartbeatSeconds });
  }

  /** The heartbeat's status: `online`, or `degraded` with the reasons of the parts that failed. */
  health(): { status: 'online' | 'degraded'; reason?: string } {
    if (this.problems.size === 0) return { status: 'online' };
    return { status: 'degraded', reason: [...this.problems.values()].join('; ') };
  }

  private async heartbeat(): Promise<void> {
    const h = this.health();
    try {
      // `reason` is not in the protocol's schema: servers ignore it, the log and a newer server read it.
      const res = await this.client.call(routes.daemonHeartbeat, { body: { ...h, loadedSignatures: { core: CORE_SIGNATURE_COUNT, custom: 0 } } }, { once: true, timeoutMs: 15_000 });
      this.log.debug('heartbeat', { status: res?.status, ...(h.reason ? { reason: h.reason } : {}) });
    } catch (e) {
      if (e instanceof StoppedError) throw e;
      if (e instanceof ProblemError && e.status === 404) {
        this.log.warn('the server no longer knows this daemon id; registering again');
        await this.register();
        return this.heartbeat();
      }
      if (e instanceof ProblemError && (e.status === 401 || e.status === 403)) {
        this.log.error('the server refused the daemon key', { status: e.status, code: e.code });
        return;
      }
      this.log.warn('heartbeat failed', { error: e instanceof ProblemError ? { status: e.status, code: e.code } : e });
    }
  }

  private scheduleHeartbeat(): void {
    if (this.stopped) return;
    this.heartbeatTimer = setTimeout(() => {
      this.heartbeat()
        .catch((e) => {
          if (!(e instanceof StoppedError)) this.log.error('heartbeat failed', { error: e });
        })
        .finally(() => this.scheduleHeartbeat());
    }, this.heartbeatSeconds * 1000);
    this.heartbeatTimer.unref?.();
  }

  /** Long-polls for jobs for as long as the daemon runs, scans included (a cancel must reach a running scan). */
  private async pollLoop(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        const job = await this.client.call(routes.daemonPoll, { body: { waitSeconds: this.pollSeconds } }, { timeoutMs: (this.pollSeconds + 15) * 1000, once: true });
        failures = 0;
        if (job) this.take(job);
      } catch (e) {
        if (e instanceof StoppedError || this.stopped) return;
        if (e instanceof ProblemError && e.status === 404) {
          this.log.warn('the server no longer knows this daemon id; registering again');
          await this.register();
          continue;
        }
        const wait = Math.max((e as { retryAfterMs?: number }).retryAfterMs ?? 0, backoffMs(failures++, 1000, 60_000));
        this.log.warn('job poll failed; retrying', { retryInMs: wait, error: e instanceof ProblemError ? { status: e.status, code: e.code } : e });
        await sleep(wait, this.stopper.signal).catch(() => undefined);
      }
    }
  }

  private take(job: z.output<typeof PollResponse>): void {
    if (job.kind === 'cancel') {
      if (this.running?.job.sessionId === job.sessionId) {
        this.log.info('cancel received; stopping the scan', { sessionId: job.sessionId });
        this.running.reason = 'cancelled';
        this.running.abort.abort();
      } else {
        const before = this.queue.length;
        this.queue = this.queue.filter((j) => j.sessionId !== job.sessionId);
        this.log.info('cancel received', { sessionId: job.sessionId, dequeued: before !== this.queue.length });
      }
      return;
    }
    this.log.info('job received', { sessionId: job.sessionId, cidr: job.target.cidr, excludeCidrs: job.target.excludeCidrs, topPortsTcp: job.target.topPortsTcp, nmap: job.target.nmap });
    this.queue.push(job);
    this.wake?.();
  }

  /** Runs queued network jobs one at a time. */
  private async scanLoop(): Promise<void> {
    while (!this.stopped) {
      const job = this.queue.shift();
      if (!job) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      const outcome = await this.scan(job);
      if (this.opts.once) {
        this.onceResult = outcome;
        this.stop();
        return;
      }
    }
  }

  private async scan(job: Job): Promise<'completed' | 'cancelled' | 'failed'> {
    const abort = new AbortController();
    const running: Running = { job, abort };
    this.running = running;
    const log = this.log.child({ sessionId: job.sessionId });
    this.problems.delete('scan');
    const started = Date.now();
    log.info('scan started', { cidr: job.target.cidr });
    try {
      const r = await runNetworkScan(job, {
        config: this.config.scan,
        nmap: this.nmapPath,
        nmapOs: this.config.nmapOs,
        log,
        signal: abort.signal,
        degrade: (reason) => this.problems.set('scan', reason),
        localFingerprint: this.localFingerprint,
        ...(this.lldp ? { lldp: this.lldp } : {}),
        send: (batch) => this.send(job, batch, abort),
      });
      log.info('scan completed', { hostsTotal: r.hostsTotal, openPorts: r.ports, durationMs: Date.now() - started });
      return 'completed';
    } catch (e) {
      if (e instanceof ScanCancelled || abort.signal.aborted) {
        log.info(running.reason === 'stopping' ? 'scan abandoned: the daemon is stopping' : 'scan cancelled', { durationMs: Date.now() - started });
        return 'cancelled';
      }
      log.error('scan failed', { error: e });
      this.problems.set('scan', `last scan failed: ${(e as Error).message}`);
      return 'failed';
    } finally {
      this.running = undefined;
    }
  }

  private async send(job: Job, batch: Batch, abort: AbortController): Promise<void> {
    if (abort.signal.aborted) throw new ScanCancelled();
    try {
      const res = await this.client.call(routes.daemonObservations, { body: { sessionId: job.sessionId, ...batch } }, { retryForMs: 10 * 60_000, timeoutMs: 120_000 });
      this.log.debug('batch delivered', { sessionId: job.sessionId, final: batch.final ?? false, hosts: batch.hosts?.length ?? 0, ports: batch.ports?.length ?? 0, accepted: res?.accepted, dedupHits: res?.dedupHits });
    } catch (e) {
      if (e instanceof ProblemError && e.code === 'session_cancelled') {
        if (this.running?.job === job) this.running.reason = 'cancelled';
        abort.abort();
        throw new ScanCancelled();
      }
      throw e;
    }
  }
}
