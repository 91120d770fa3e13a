/** Where the repository is, from a compiled benchmark script. */
import { existsSync } from 'node:fs';
import * as path from 'node:path';

/** The repository root: the nearest directory upward with a package.json (dist/bench/x → the repo). */
export function repoRoot(from = __dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}
