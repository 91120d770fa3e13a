import { createRequire } from 'node:module';
import { statSync } from 'node:fs';
import { join, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { TritonError } from '../../base/errors';

// Under CommonJS, TypeScript compiles `import()` to `require()`, which cannot load an ES module.
const importModule = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

/**
 * Loads the user's module in the worker (`require` for CommonJS, `import()` for ES modules) and returns the
 * export named `exportName`. For `'default'`, a CommonJS module without a default export gives `module.exports`.
 * With `freshUnder`, the modules below that folder are read again from disk rather than taken from the module
 * cache (a model's files changed since they were last loaded).
 */
export async function loadExport(path: string, exportName: string, freshUnder?: string): Promise<unknown> {
  if (freshUnder !== undefined) forgetModules(freshUnder);
  // An ES module cannot leave the cache: a new URL (the file's modification time) loads it again.
  const url = (): string => pathToFileURL(path).href + (freshUnder !== undefined ? `?mtime=${statSync(path).mtimeMs}` : '');
  let mod: unknown;
  if (/\.mjs$/i.test(path)) mod = await importModule(url());
  else {
    try {
      mod = createRequire(path)(path);
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'ERR_REQUIRE_ESM') throw err;
      mod = await importModule(url());
    }
  }
  const exports = (typeof mod === 'object' || typeof mod === 'function') && mod !== null ? (mod as Record<string, unknown>) : {};
  const value = exportName === 'default' ? (exports.default ?? mod) : exports[exportName];
  if (value === undefined || value === null) {
    const names = Object.keys(exports);
    throw new TritonError(
      'INVALID_CONFIG',
      `module '${path}' has no export '${exportName}'` + (names.length > 0 ? ` (it exports: ${names.join(', ')})` : ''),
    );
  }
  return value;
}

/** Drops the CommonJS modules loaded from below `dir` from the module cache. */
function forgetModules(dir: string): void {
  const prefix = dir.endsWith(sep) ? dir : dir + sep;
  // The cache of the require that loadExport uses (under a test runner, `require.cache` may be another).
  const cache = createRequire(prefix).cache;
  for (const key of Object.keys(cache)) if (key.startsWith(prefix)) delete cache[key];
}

/**
 * Lets this thread `require` `.ts` (and `.cts`) files without a build step: installs the hook in register-ts.js,
 * which compiles each file with esbuild (a dependency of tstriton) as it loads; a no-op when a `.ts` hook is there
 * already (a run from the sources, tsx or ts-node). `what` names the file for the error a user sees.
 *
 * @throws TritonError `INVALID_CONFIG` when the `esbuild` package cannot be found.
 */
export function enableTypeScript(what: string): void {
  if (require.extensions['.ts']) return;
  try {
    require.resolve('esbuild');
  } catch {
    throw new TritonError(
      'INVALID_CONFIG',
      `${what}: loading a .ts file needs the 'esbuild' package, a dependency of tstriton that is missing here (reinstall tstriton), or compile the file to .js`,
    );
  }
  // The hook is CommonJS beside this file, in the sources and (copied by the build) in dist/.
  createRequire(__filename)(join(__dirname, 'register-ts.js'));
}
