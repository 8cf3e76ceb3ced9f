import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { UsageError, parseFlags } from '../cli/args.js';
import { withMigratedDatabase } from '../db/open.js';
import { AppError } from '../errors.js';
import type { CliVerb } from '../module.js';
import * as repo from './advisories.repo.js';
import { type ImportResult, importAdvisoryFile } from './import.service.js';

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
import: NVD CVE API 2.0 JSON (a response page, one record, or a release file of the NVD JSON mirror
  with cve_items) and OSV JSON (one record or an array), plain, gzip or xz, or a zip archive of such
  files (every *.json entry: an OSV ecosystem's all.zip), read as a stream; idempotent (a record
  already held at a newer modification, or at the same with the same content, changes nothing);
  prints new, updated, unchanged and skipped (with why) per file. Matching follows on the next
  cve.match run (every 5 minutes).
status: how many advisories, when the mirror was last confirmed current, the feed's last error.
rematch: every organisation's next cve.match run matches all of its services again.
Exit 2 on bad arguments, 1 when a path is not a readable file (nothing is imported), or when a file's
content cannot be read or holds no usable record (the other files are still imported; records before a
fault are kept; the mirror is not confirmed current by such a file).`,
  async run([sub, ...args], io, config) {
    if (sub === 'import') {
      const files = args.filter((a) => !a.startsWith('--'));
      const f = parseFlags(args.filter((a) => a.startsWith('--')), { json: 'boolean' });
      if (files.length === 0) throw new UsageError('advisories import needs at least one FILE');
      // A path that is not a readable file fails before anything is imported; its content is read
      // as it is imported (a mirror release is gigabytes: never read twice, never held whole).
      for (const file of files) {
        try {
          if (!(await stat(file)).isFile()) throw new Error(`${file}: not a file`);
          await access(file, constants.R_OK);
        } catch (err) {
          io.err(`surveyor: ${(err as Error).message}`);
          return 1;
        }
      }
      return withMigratedDatabase(config, async (database) => {
        const results: Record<string, ImportResult | { error: string }> = {};
        let failed = false;
        for (const file of files) {
          try {
            const r = await importAdvisoryFile(database.db, file);
            results[file] = r;
            if (!f.json) io.out(human(file, r));
          } catch (err) {
            // A file without one usable record (AppError), or whose content cannot be read (SyntaxError, naming
            // it): said, counted as a failure, the other files still imported.
            if (!(err instanceof AppError) && !(err instanceof SyntaxError)) throw err;
            failed = true;
            results[file] = { error: err.message };
            io.err(err instanceof AppError ? `surveyor: ${file}: ${err.message}` : `surveyor: ${err.message}`);
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
