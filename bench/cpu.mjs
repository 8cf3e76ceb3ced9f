// CPU time for the benchmarks, in seconds of user and system time (Linux /proc, ticks of 10 ms):
// tells where an operation's time went (the web process, its threads, the client, PostgreSQL) on a
// machine whose rates move with other work. NaN where /proc cannot be read.
import { readdirSync, readFileSync } from 'node:fs';

const TICK = 100;

/** utime + stime in a /proc stat line (the fields after the command's closing parenthesis). */
const ticksOf = (stat) => {
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / TICK;
};

/** utime + stime of a /proc/<pid>[/task/<tid>]/stat file; NaN if it cannot be read. */
function statCpu(file) {
  try {
    return ticksOf(readFileSync(file, 'latin1'));
  } catch {
    return Number.NaN;
  }
}

/** The calling thread alone (a worker thread's own time). */
export const threadCpu = () => statCpu('/proc/thread-self/stat');

/** The main thread of the process `pid` (its JavaScript and its GC's main-thread share). */
export const mainThreadCpu = (pid = process.pid) => statCpu(`/proc/${pid}/task/${pid}/stat`);

/** The whole process `pid`, every thread. */
export const processCpu = (pid) => statCpu(`/proc/${pid}/stat`);

/** Every PostgreSQL process on the machine (other clients of the same server included; a backend that exited is gone from /proc). */
export function postgresCpu() {
  let seconds = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).startsWith('postgres')) seconds += ticksOf(stat);
    } catch {}
  }
  return seconds;
}

/** The whole machine, all cores: every state of /proc/stat's first line but idle and iowait. */
export function machineCpu() {
  const v = readFileSync('/proc/stat', 'latin1').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
  return (v.reduce((a, b) => a + b, 0) - v[3] - v[4]) / TICK;
}
