import { ConfigError, HELP, parseCommandLine } from './config.js';
import { Daemon, FatalError } from './daemon.js';
import { createLogger, withoutUserinfo } from './log.js';
import { daemonVersion } from './system.js';

async function main(): Promise<number> {
  let cli;
  try {
    cli = parseCommandLine(process.argv.slice(2));
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`surveyor-daemon: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  if (cli.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (cli.version) {
    process.stdout.write(`surveyor-daemon ${daemonVersion()}\n`);
    return 0;
  }
  const config = cli.config!;
  const log = createLogger(config.logLevel);
  const daemon = new Daemon(config, log, { once: cli.once });
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    process.once(sig, () => {
      log.info('stopping', { signal: sig });
      daemon.stop();
    });
  }
  log.info('starting', { version: daemon.version, server: withoutUserinfo(config.server), name: config.name, stateDir: config.stateDir, nmap: daemon.nmapPath, once: cli.once });
  try {
    return await daemon.run();
  } catch (e) {
    log.error(e instanceof FatalError ? e.message : 'the daemon stopped on an error', { error: e });
    return e instanceof FatalError ? 3 : 1;
  }
}

process.exitCode = await main();
