import { extname, join } from 'node:path';

/**
 * The entry of a worker thread whose file `name` (without extension) lies in `dir`, beside the module that starts
 * it: the compiled `.js` in dist/, or, when tstriton runs from its TypeScript sources (jest, ts tooling), the `.ts`
 * file with the TypeScript hook (lib/instances/worker/register-ts.js) preloaded. `caller` is that module's
 * `__filename`, whose extension says which. `execArgv` is the thread's node flags when its starter names them
 * (the thread inherits the process's otherwise); the hook is added to them.
 */
export function threadEntry(
  dir: string,
  name: string,
  caller: string,
  execArgv?: readonly string[],
): { filename: string; execArgv: string[] | undefined } {
  const ext = extname(caller);
  const filename = join(dir, `${name}${ext}`);
  if (ext !== '.ts') return { filename, execArgv: execArgv && [...execArgv] };
  return { filename, execArgv: [...(execArgv ?? process.execArgv), '--require', join(__dirname, '..', 'instances', 'worker', 'register-ts.js')] };
}
