import { UsageError, parseFlags } from '../cli/args.js';
import { withMigratedDatabase } from '../db/open.js';
import { AppError } from '../errors.js';
import type { CliVerb } from '../module.js';
import * as repo from './advisories.repo.js';
import { type ImportResult, importAdvisories, readAdvisoryFile } from './import.service.js';

function human(file: string, r: ImportResult): string {
  const lines = [`${file}: ${r.new} new, ${r.updated} updated, ${r.unchanged} unchanged, ${r.skippedCount} skipped`];
  for (const s of r.skipped) lines.push(`  skipped ${s.id ?? '(no id)'}: ${s.reason}`);
  if (r.skippedCount > r.skipped.length) lines.push(`  … and ${r.skippedCount - r.skipped.length} more`);
  return lines.join('\n');
}

/** `surveyor advisories …`: the advisory mirror, straight on the database. */
export const advisoriesVerb: CliVerb = {
  usage: ['advisories import FILE… [--json]', 'advisories status [--json]', 'advisories rematch'],
  help: `Manages the advisory mirror shared by every organisation (migrating the database first).
import: NVD CVE API 2.0 JSON (a response page or one record) and OSV JSON (one record or an array),
  plain or gzip; idempotent (a record already held at a newer modification, or at the same with the
  same content, changes nothing); prints new, updated, unchanged and skipped (with why) per file. Matching follows on
  the next cve.match run (every 5 minutes).
status: how many advisories, when the mirror was last confirmed current, the feed's last error.
rematch: every organisation's next cve.match run matches all of its services again.
Exit 2 on bad arguments, 1 when a file cannot be read or holds no usable record (the other files are still imported;
the mirror is not confirmed current by such a file).`,
  async run([sub, ...args], io, config) {
    if (sub === 'import') {
      const files = args.filter((a) => !a.startsWith('--'));
      const f = parseFlags(args.filter((a) => a.startsWith('--')), { json: 'boolean' });
      if (files.length === 0) throw new UsageError('advisories import needs at least one FILE');
      const docs: [string, unknown][] = [];
      for (const file of files) {
        try {
          docs.push([file, await readAdvisoryFile(file)]);
        } catch (err) {
          io.err(`surveyor: ${(err as Error).message}`);
          return 1;
        }
      }
      return withMigratedDatabase(config, async (database) => {
        const results: Record<string, ImportResult | { error: string }> = {};
        let failed = false;
        for (const [file, doc] of docs) {
          try {
            const r = await importAdvisories(database.db, [doc]);
            results[file] = r;
            if (!f.json) io.out(human(file, r));
          } catch (err) {
            if (!(err instanceof AppError)) throw err;
            // A file without one usable record: said, counted as a failure, the other files still imported.
            failed = true;
            results[file] = { error: err.message };
            io.err(`surveyor: ${file}: ${err.message}`);
          }
        }
        if (f.json) io.out(JSON.stringify(results));
        return failed ? 1 : 0;
      });
    }
    if (sub === 'status') {
      const f = parseFlags(args, { json: 'boolean' });
      return withMigratedDatabase(config, async (database) => {
        const s = await repo.mirrorStatus(database.db);
        io.out(f.json ? JSON.stringify(s) : [
          `advisories: ${s.advisories} (${s.nvd} NVD, ${s.osv} OSV, ${s.withdrawn} withdrawn)`,
          `confirmed current: ${s.confirmedAt ?? 'never'}`,
          `feed: ${s.url ?? '(none pulled)'}${s.lastError ? `; last error at ${s.lastAttemptAt}: ${s.lastError}` : ''}`,
        ].join('\n'));
        return 0;
      });
    }
    if (sub === 'rematch') {
      parseFlags(args, {});
      return withMigratedDatabase(config, async (database) => {
        const n = await repo.clearMatchState(database.db);
        io.out(`The next cve.match run matches every service again (${n} organisation(s) had matched).`);
        return 0;
      });
    }
    throw new UsageError(`unknown advisories command ${JSON.stringify(sub ?? '')} (one of import, status, rematch)`);
  },
};
