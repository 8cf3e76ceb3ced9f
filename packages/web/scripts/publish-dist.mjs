// Swaps a finished build into dist/ (vite builds into dist.next/): a server running meanwhile (a
// second `npm start`, the tests) never serves a half-emptied console, only the old build or the new.
import { existsSync, renameSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const at = (p) => fileURLToPath(new URL(`../${p}`, import.meta.url));
if (!existsSync(at('dist.next/index.html'))) throw new Error('dist.next/index.html is missing: the build did not finish');
rmSync(at('dist.old'), { recursive: true, force: true });
if (existsSync(at('dist'))) renameSync(at('dist'), at('dist.old'));
renameSync(at('dist.next'), at('dist'));
rmSync(at('dist.old'), { recursive: true, force: true });
