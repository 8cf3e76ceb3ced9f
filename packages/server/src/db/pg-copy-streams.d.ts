declare module 'pg-copy-streams' {
  import type { Writable } from 'node:stream';
  export function from(text: string): Writable & { rowCount: number };
}
