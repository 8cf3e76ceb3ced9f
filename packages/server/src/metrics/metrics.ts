import { scanSessionStates } from '@surveyor/contract';
import { type Kysely, sql } from 'kysely';
import { feedAgeSeconds } from '../advisories/advisories.repo.js';
import type { DB } from '../db/schema.js';
import { certificatesExpiring, sessionCounts } from '../overview/overview.repo.js';

const DAEMON_STATUSES = ['pending', 'online', 'degraded'] as const;
const SEVERITIES = ['critical', 'high', 'medium', 'low', 'none'] as const;
const FINDING_STATES = ['open', 'acknowledged', 'resolved', 'false_positive'] as const;
const WINDOWS = [['expired', 0], ['1d', 1], ['7d', 7], ['14d', 14], ['30d', 30]] as const;
const AI_OUTCOMES = ['ok', 'rate_limited', 'upstream_error', 'upstream_timeout', 'aborted', 'error'] as const;

interface Family {
  name: string;
  help: string;
  /** Default gauge. */
  type?: 'counter';
  samples: { labels?: Record<string, string>; value: number }[];
}

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const formatValue = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(3));

/** Prometheus text exposition format 0.0.4: HELP and TYPE (all gauges here), then the samples. */
export function exposition(families: Family[]): string {
  const lines: string[] = [];
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type ?? 'gauge'}`);
    for (const s of f.samples) {
      const labels = s.labels ? `{${Object.entries(s.labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}` : '';
      lines.push(`${f.name}${labels} ${formatValue(s.value)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/**
 * The metrics of spec 4.8 for one organisation, read at scrape time in a fixed number of queries
 * (each a grouped count or an aggregate over an index; none per host). Counts list every value of
 * their enumeration (decisions.md), 0 where nothing is counted; ages appear only where the thing
 * exists. Job metrics: the age is that of the job's last run as a whole (the scheduler's
 * liveness); the outcome is this organisation's last run where the job works per organisation,
 * else the job's.
 */
export async function collectMetrics(db: Kysely<DB>, organisationId: string, now: Date = new Date()): Promise<string> {
  const o = organisationId;
  const [jobs, daemons, sessions, findings, certs, counts, snapshot, feedAge, aiTurns] = await Promise.all([
    sql<{ job: string; age: number; ok: boolean }>`
      select g.job, extract(epoch from (${now}::timestamptz - g.last_run_at))::float8 as age, coalesce(mine.outcome, g.outcome) = 'ok' as ok
      from job_status g left join job_status mine on mine.job = g.job and mine.organisation_id = ${o}
      where g.organisation_id is null and g.last_run_at is not null order by g.job`.execute(db),
    sql<{ status: string; n: number; quiet: number | null }>`
      select status, count(*)::int as n, max(extract(epoch from (${now}::timestamptz - coalesce(last_heartbeat_at, created_at))))::float8 as quiet
      from daemons where organisation_id = ${o} and disabled_at is null and removed_at is null group by status`.execute(db),
    sessionCounts(db, o),
    sql<{ severity: string; state: string; n: number }>`select severity, state, count(*)::int as n from vulnerabilities where organisation_id = ${o} group by severity, state`.execute(db),
    certificatesExpiring(db, o, now),
    sql<{ hosts: number; services: number }>`
      select (select count(*) from hosts where organisation_id = ${o})::int as hosts,
             (select count(*) from services where organisation_id = ${o} and gone_at is null)::int as services`.execute(db),
    sql<{ age: number | null }>`
      select extract(epoch from (${now}::timestamptz - max(captured_at)))::float8 as age from snapshots where organisation_id = ${o}`.execute(db),
    feedAgeSeconds(db, now),
    sql<{ outcome: string; n: number }>`select outcome, turns::float8 as n from assistant_turn_totals where organisation_id = ${o}`.execute(db),
  ]);
  const aiBy = new Map(aiTurns.rows.map((r) => [r.outcome, r.n]));
  const daemonBy = new Map(daemons.rows.map((r) => [r.status, r]));
  const findingBy = new Map(findings.rows.map((r) => [`${r.severity}|${r.state}`, r.n]));
  const age = (v: number) => Math.max(0, v);
  const families: Family[] = [
    { name: 'service_job_last_run_age_seconds', help: 'Seconds since the job last ran. Above 3 times its interval: the scheduler stopped.', samples: jobs.rows.map((j) => ({ labels: { job: j.job }, value: age(j.age) })) },
    { name: 'service_job_last_run_ok', help: '1 when the last run of the job succeeded, 0 when it failed.', samples: jobs.rows.map((j) => ({ labels: { job: j.job }, value: j.ok ? 1 : 0 })) },
    {
      name: 'service_daemon_quiet_seconds',
      help: 'Longest quiet time (since the last heartbeat, or registration) of the daemons in each status. Above 300 while online: a silent daemon.',
      samples: DAEMON_STATUSES.filter((s) => daemonBy.has(s)).map((s) => ({ labels: { status: s }, value: age(daemonBy.get(s)!.quiet ?? 0) })),
    },
    { name: 'service_daemons', help: 'Daemons per status.', samples: DAEMON_STATUSES.map((s) => ({ labels: { status: s }, value: daemonBy.get(s)?.n ?? 0 })) },
    ...(snapshot.rows[0]?.age == null ? [] : [{ name: 'service_snapshot_age_seconds', help: 'Seconds since the latest snapshot. Above about 90000: a daily snapshot was missed.', samples: [{ value: age(snapshot.rows[0].age) }] }]),
    ...(feedAge === null
      ? []
      : [{ name: 'service_cve_feed_age_seconds', help: 'Seconds since the advisory mirror last changed or was confirmed current (an import, or a fetch of SERVICE_ADVISORY_FEED_URL). Absent while it holds no advisory.', samples: [{ value: age(feedAge) }] }]),
    { name: 'service_scan_sessions', help: 'Scan sessions per state.', samples: scanSessionStates.map((s) => ({ labels: { state: s }, value: sessions[s] })) },
    {
      name: 'service_findings',
      help: 'Vulnerability findings per severity and state.',
      samples: SEVERITIES.flatMap((severity) => FINDING_STATES.map((state) => ({ labels: { severity, state }, value: findingBy.get(`${severity}|${state}`) ?? 0 }))),
    },
    {
      name: 'service_certificates_expiring',
      help: 'Certificates whose notAfter falls within the window (cumulative, not yet expired); expired: already past.',
      samples: WINDOWS.map(([w]) => ({ labels: { window: w }, value: certs[w] })),
    },
    { name: 'service_hosts', help: 'Hosts in the inventory.', samples: [{ value: counts.rows[0]!.hosts }] },
    { name: 'service_services', help: 'Services in the inventory (those not gone).', samples: [{ value: counts.rows[0]!.services }] },
    {
      name: 'service_ai_turns_total',
      type: 'counter',
      help: 'Questions asked of the assistant, by outcome: ok, rate_limited / upstream_error / upstream_timeout (the provider failed), aborted (the browser left), error.',
      samples: AI_OUTCOMES.map((outcome) => ({ labels: { outcome }, value: aiBy.get(outcome) ?? 0 })),
    },
  ];
  return exposition(families);
}
