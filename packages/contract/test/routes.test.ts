import { describe, expect, it } from 'vitest';
import * as contract from '../src/index.js';
import { type RouteDef, inventoryReadRoutes, inventoryRoutes, inventoryWriteRoutes, routes } from '../src/index.js';

/** Every exported route table but `routes` and `inventoryRoutes` (the two inventory tables together). */
const domainTables = Object.entries(contract).filter(([name]) => name.endsWith('Routes') && name !== 'inventoryRoutes') as [string, Record<string, RouteDef>][];

describe('route tables per domain', () => {
  it('are disjoint and together are exactly `routes`, the same route objects', () => {
    expect(domainTables.length).toBeGreaterThanOrEqual(12);
    const seen = new Map<string, string>();
    for (const [table, defs] of domainTables) {
      for (const [name, def] of Object.entries(defs)) {
        expect(seen.get(name), `${name} is in ${seen.get(name)} and ${table}`).toBeUndefined();
        seen.set(name, table);
        expect(typeof def.operationId, `${table}.${name}`).toBe('string');
        expect(routes[name as keyof typeof routes], name).toBe(def);
      }
    }
    expect([...seen.keys()].sort()).toEqual(Object.keys(routes).sort());
  });

  it('split the inventory into its collections and its writes, nothing else', () => {
    expect(Object.keys(inventoryRoutes)).toEqual([...Object.keys(inventoryReadRoutes), ...Object.keys(inventoryWriteRoutes)]);
  });

  it('give every route its own operationId and its own method and path', () => {
    const all = Object.values(routes);
    expect(new Set(all.map((r) => r.operationId)).size).toBe(all.length);
    expect(new Set(all.map((r) => `${r.method} ${r.url}`)).size).toBe(all.length);
  });
});
