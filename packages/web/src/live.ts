import { useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { invalidateAll, invalidatedBy } from './queries';

const ACTIONS = ['created', 'updated', 'deleted', 'started', 'finished', 'failed'];

/**
 * Opens the live change stream (GET /api/sse, session cookie) while signed in and marks the
 * matching queries stale on each `<type>.<action>` event. A scan sends bursts of events, so
 * invalidations are gathered for a second before they run. The browser reconnects by itself and
 * resumes with Last-Event-ID; `reset` (the resume point is too old) and `overflow` refresh everything.
 */
export function useLiveUpdates(enabled: boolean): void {
  const client = useQueryClient();
  useEffect(() => {
    if (!enabled || typeof EventSource === 'undefined') return;
    const source = new EventSource('/api/sse');
    const pending = new Set<string>();
    let timer: ReturnType<typeof setTimeout> | null = null;
    const flush = () => {
      timer = null;
      for (const key of pending) void client.invalidateQueries({ queryKey: [key] });
      pending.clear();
    };
    const listeners: [string, () => void][] = [];
    for (const [type, keys] of Object.entries(invalidatedBy)) {
      const onEvent = () => {
        for (const k of keys) pending.add(k[0]!);
        timer ??= setTimeout(flush, 1000);
      };
      for (const action of ACTIONS) listeners.push([`${type}.${action}`, onEvent]);
    }
    const refreshAll = () => invalidateAll(client);
    listeners.push(['reset', refreshAll], ['overflow', refreshAll]);
    for (const [name, fn] of listeners) source.addEventListener(name, fn);
    return () => {
      for (const [name, fn] of listeners) source.removeEventListener(name, fn);
      source.close();
      if (timer) clearTimeout(timer);
    };
  }, [enabled, client]);
}
