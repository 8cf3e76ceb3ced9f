import { type ChangeType, changeActions, changeTypes, routePath, routes, streamControlEvents } from '@surveyor/contract';
import { type QueryClient, type QueryKey, useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { certificateKeys, daemonKeys, hostKeys, jobKeys, networkKeys, overviewKeys, scanKeys, searchKeys, serviceKeys, sessionKeys, siteKeys, snapshotKeys, topologyKeys, vulnerabilityKeys } from '../lib/keys';
import { viewKeys } from '../features/topology/api';

/**
 * What a change of each type (the contract's `changeTypes`) makes stale. Typed over every type:
 * a change type the console does not handle fails the type check.
 */
export const refreshedBy: Record<ChangeType, readonly QueryKey[]> = {
  host: [hostKeys.all, overviewKeys.all, searchKeys.all],
  service: [serviceKeys.all, hostKeys.all, searchKeys.all],
  vulnerability: [vulnerabilityKeys.all, overviewKeys.all, searchKeys.all],
  job: [jobKeys.all, overviewKeys.all],
  // A daemon's page lists its sessions (daemonKeys): a scan moving changes it.
  scan: [hostKeys.all, serviceKeys.all, jobKeys.all, scanKeys.all, networkKeys.all, certificateKeys.all, overviewKeys.all, daemonKeys.all],
  // A network deleted takes its sessions with it; a network moved changes a site's page (its networks are a networks query).
  network: [networkKeys.all, scanKeys.all, searchKeys.all],
  daemon: [daemonKeys.all, overviewKeys.all],
  snapshot: [snapshotKeys.all, overviewKeys.all],
  // A site deleted takes its topology views with it.
  site: [siteKeys.all, daemonKeys.all, topologyKeys.all, viewKeys.all],
  topology: [topologyKeys.all, viewKeys.all],
};

/** Marks every query but the session stale (a `reset` or `overflow` of the stream). */
export function invalidateAll(client: QueryClient): void {
  void client.invalidateQueries({ predicate: (q) => q.queryKey[0] !== sessionKeys.me[0] });
}

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
    const source = new EventSource(routePath(routes.sse));
    const pending = new Map<string, QueryKey>();
    let timer: ReturnType<typeof setTimeout> | null = null;
    const flush = () => {
      timer = null;
      for (const key of pending.values()) void client.invalidateQueries({ queryKey: key });
      pending.clear();
    };
    const listeners: [string, () => void][] = [];
    for (const type of changeTypes) {
      const onEvent = () => {
        for (const k of refreshedBy[type]) pending.set(JSON.stringify(k), k);
        timer ??= setTimeout(flush, 1000);
      };
      for (const action of changeActions) listeners.push([`${type}.${action}`, onEvent]);
    }
    const refreshAll = () => invalidateAll(client);
    for (const name of streamControlEvents) listeners.push([name, refreshAll]);
    for (const [name, fn] of listeners) source.addEventListener(name, fn);
    return () => {
      for (const [name, fn] of listeners) source.removeEventListener(name, fn);
      source.close();
      if (timer) clearTimeout(timer);
    };
  }, [enabled, client]);
}
