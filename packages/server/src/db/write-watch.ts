import type { KyselyPlugin, OperationNode, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';

/**
 * Process-wide: who wants to hear, at once, that a statement of this process changed one of some
 * tables. An in-memory cache of rows of those tables (the verified credentials of auth/) drops
 * what it holds on the spot instead of waiting for a NOTIFY to come back from the database, so a
 * revocation made in this process holds from its very next request.
 */
const watchers: { tables: ReadonlySet<string>; ignore: ReadonlySet<string>; onWrite: () => void }[] = [];

/**
 * Calls `onWrite` after every statement of any database handle of this process that updates or
 * deletes rows of `tables` (inserts are not reported: a cache of verified rows has nothing to
 * drop for a new row). An update that sets only `ignoreColumns` (a last-used time) is not
 * reported. Returns the unsubscribe function.
 */
export function watchTableWrites(tables: readonly string[], onWrite: () => void, ignoreColumns: readonly string[] = []): () => void {
  const w = { tables: new Set(tables), ignore: new Set(ignoreColumns), onWrite };
  watchers.push(w);
  return () => {
    const i = watchers.indexOf(w);
    if (i >= 0) watchers.splice(i, 1);
  };
}

type Written = { table: string; columns: string[] | null };

/** The tables an update or delete statement writes, with the columns an update sets; raw SQL read from its text. */
function written(node: RootOperationNode): Written[] {
  const n = node as OperationNode & Record<string, unknown>;
  if (n.kind === 'UpdateQueryNode' || n.kind === 'DeleteQueryNode') {
    const tables: string[] = [];
    const walk = (x: unknown): void => {
      if (!x || typeof x !== 'object') return;
      const o = x as Record<string, unknown>;
      if (o.kind === 'TableNode') {
        const t = (o.table as { identifier?: { name?: string } } | undefined)?.identifier?.name;
        if (t) tables.push(t);
        return;
      }
      for (const v of Object.values(o)) if (Array.isArray(v)) v.forEach(walk); else if (v && typeof v === 'object') walk(v);
    };
    walk(n.kind === 'UpdateQueryNode' ? n.table : n.from);
    const columns = n.kind === 'UpdateQueryNode'
      ? ((n.updates as { column?: { column?: { name?: string } } }[] | undefined) ?? []).map((u) => u.column?.column?.name ?? '?')
      : null;
    return tables.map((table) => ({ table, columns }));
  }
  if (n.kind === 'RawNode') {
    const text = (n.sqlFragments as readonly string[]).join('?');
    return [...text.matchAll(/\b(?:update|delete\s+from)\s+(?:only\s+)?(?:"?\w+"?\.)?"?(\w+)"?/gi)].map((m) => ({ table: m[1]!.toLowerCase(), columns: null }));
  }
  return [];
}

/** The Kysely plugin behind watchTableWrites, installed on every handle openDatabase makes. */
export class WriteWatchPlugin implements KyselyPlugin {
  private readonly pending = new WeakMap<object, Written[]>();

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (watchers.length) {
      const w = written(args.node);
      if (w.length) this.pending.set(args.queryId, w);
    }
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    const w = this.pending.get(args.queryId);
    if (w) {
      this.pending.delete(args.queryId);
      for (const watcher of [...watchers]) {
        if (w.some((x) => watcher.tables.has(x.table) && (x.columns === null || x.columns.some((c) => !watcher.ignore.has(c))))) watcher.onWrite();
      }
    }
    return args.result;
  }
}
