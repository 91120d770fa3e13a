import * as path from 'node:path';
import { TritonError } from '../base/errors';
import { enableTypeScript, loadExport } from '../instances/worker/load-export';
import type { Triton } from '../triton/triton';

/** What a `--module` exports: a function that binds models on the server it is given. */
export type BindModule = (triton: Triton) => void | Promise<void>;

/**
 * Loads a `--module` file and calls its default export (or its export `bind`) with the server. A `.ts` (or `.cts`)
 * file loads without a build step, compiled by esbuild as it loads (register-ts.js); `.js`, `.cjs` and `.mjs` load
 * as Node loads them.
 *
 * @throws TritonError `INVALID_CONFIG` when the file exports no binding function, or a `.ts` file cannot be compiled
 * because the `esbuild` package is missing.
 */
export async function bindModule(triton: Triton, file: string): Promise<void> {
  const resolved = path.resolve(file);
  if (/\.c?ts$/i.test(resolved)) enableTypeScript(`--module ${file}`);
  const loaded = await loadExport(resolved, 'default');
  // A function has a `bind` of its own (Function.prototype.bind), so a default export is taken first.
  const bind = typeof loaded === 'function' ? loaded : (loaded as { bind?: unknown }).bind;
  if (typeof bind !== 'function') {
    throw new TritonError('INVALID_CONFIG', `--module ${file}: expected a default export (or an export "bind") that is a function (triton) => void`);
  }
  await (bind as BindModule)(triton);
}
