import type { KeyRow } from './auth.repo.js';

/** The channel migration 0041's triggers notify when a key, a membership or a user changes in a way that matters to a credential. */
export const CREDENTIALS_CHANNEL = 'surveyor_credentials';

/**
 * Verified key rows by token hash, so a busy key's reads skip the lookup that would otherwise be
 * one of the two round trips of every request (issue 30).
 *
 * Revocation stays immediate: the whole cache is dropped
 * - at once, after any statement of this process that revokes, deletes or re-scopes a key, or
 *   changes or removes a membership or a user (db/write-watch.ts), so the next request of this
 *   process reads the database again;
 * - when the database announces such a change on CREDENTIALS_CHANNEL (triggers of migration
 *   0041, whatever process or tool made it: another web process, the CLI, psql), milliseconds
 *   after it commits, and when the listening connection comes back after a loss ('*');
 * - in any case `ttlMs` after an entry was read, should a notification be lost.
 * Only rows that authenticate are kept (an unknown token is looked up every time, so a key minted
 * elsewhere works at once); expiry is checked on every use against the kept `expires_at`.
 */
export class CredentialCache {
  private readonly rows = new Map<string, { row: KeyRow; at: number }>();
  private generation = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The kept row of `tokenHash`, or undefined when none is kept or it is older than the TTL. */
  get(tokenHash: string): KeyRow | undefined {
    const e = this.rows.get(tokenHash);
    if (!e) return undefined;
    if (this.now() - e.at >= this.ttlMs) {
      this.rows.delete(tokenHash);
      return undefined;
    }
    return e.row;
  }

  /** A mark to pass to `set`: a row read before a later `clear` is not kept. */
  mark(): number {
    return this.generation;
  }

  /** Keeps `row`, read from the database after `mark()` returned `mark`, unless the cache was cleared since. */
  set(tokenHash: string, row: KeyRow, mark: number): void {
    if (mark !== this.generation || this.ttlMs <= 0) return;
    if (this.rows.size >= this.maxEntries) this.rows.delete(this.rows.keys().next().value!);
    this.rows.set(tokenHash, { row, at: this.now() });
  }

  clear(): void {
    this.generation++;
    this.rows.clear();
  }
}
