import { type RouteBody, routes } from '@surveyor/contract';
import { useQuery } from '@tanstack/react-query';
import { call } from '../../lib/api';

export const advisoryKeys = { mirror: ['advisories', 'mirror'] as const };

/** The advisory mirror's counts and its feed's state (`GET /api/v1/advisories`, internal). */
export const useAdvisoryMirror = () => useQuery({ queryKey: advisoryKeys.mirror, queryFn: ({ signal }) => call(routes.advisoryMirror, {}, { signal }) });

export const importAdvisoryDocument = (document: RouteBody<typeof routes.adminAdvisoryImport>) => call(routes.adminAdvisoryImport, { body: document });

/**
 * The JSON document in a file as NVD or OSV publish it, plain or gzip (told by its first two bytes,
 * 1f 8b), decompressed in the browser. Throws an Error saying why a file cannot be read.
 */
export async function readAdvisoryFile(file: File): Promise<unknown> {
  const head = new Uint8Array(await file.slice(0, 2).arrayBuffer());
  const gzip = head[0] === 0x1f && head[1] === 0x8b;
  const text = gzip ? await new Response(file.stream().pipeThrough(new DecompressionStream('gzip'))).text() : await file.text();
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${file.name} is not ${gzip ? 'gzip-compressed ' : ''}JSON: ${(e as Error).message}`);
  }
}
