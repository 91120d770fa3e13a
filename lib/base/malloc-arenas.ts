import { isMainThread } from 'node:worker_threads';

/**
 * glibc's arena cap a server starts under unless its environment names one. glibc gives each thread that allocates
 * under contention an arena of its own (up to 8 per core), and an arena returns memory only from its top, so a
 * burst leaves each front-end thread's arena holding pages the process no longer uses. Two arenas keep what bursts
 * leave behind flat (docs/threads.md, "Memory").
 */
export const MALLOC_ARENA_MAX = '2';

/** What decides whether a process restarts under the cap: the parts of `process` it reads. */
export interface ArenaCapProcess {
  platform: NodeJS.Platform;
  env: NodeJS.ProcessEnv;
  /** The running C library's glibc version, absent under musl or another libc. */
  glibcVersion: () => string | undefined;
}

/**
 * The environment a server should restart with to run under {@link MALLOC_ARENA_MAX}, or `undefined` when it
 * already does or cannot: not Linux, not glibc, or the environment already sets the cap (`MALLOC_ARENA_MAX`, or
 * `glibc.malloc.arena_max` in `GLIBC_TUNABLES`), which is how a deployment chooses another value.
 */
export function arenaCapEnvironment(proc: ArenaCapProcess = thisProcess()): NodeJS.ProcessEnv | undefined {
  if (proc.platform !== 'linux') return undefined;
  if (proc.env.MALLOC_ARENA_MAX !== undefined) return undefined;
  if (/(^|:)glibc\.malloc\.arena_max=/.test(proc.env.GLIBC_TUNABLES ?? '')) return undefined;
  if (proc.glibcVersion() === undefined) return undefined;
  return { ...proc.env, MALLOC_ARENA_MAX };
}

/**
 * Restarts this process in place (same pid, same arguments and flags; `process.execve`) under glibc's arena cap
 * when its environment sets none; returns when there is nothing to do. glibc reads the cap once, before any code
 * runs, so this is the first thing a server's entry script does, before it writes anything or opens anything:
 * `tstriton serve` and the example server call it.
 *
 * Does nothing on a worker thread, in a process with an IPC channel to its parent (the channel would not survive
 * the restart: the parent sets the environment itself), in a process that runs no script file (`node -e`), or on a
 * Node without `process.execve` (before 22.15).
 */
export function capMallocArenas(): void {
  if (!isMainThread || process.channel !== undefined || process.argv[1] === undefined) return;
  const execve = (process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never }).execve;
  if (typeof execve !== 'function') return;
  const env = arenaCapEnvironment();
  if (env === undefined) return;
  execve.call(process, process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], env);
}

function thisProcess(): ArenaCapProcess {
  return { platform: process.platform, env: process.env, glibcVersion: runningGlibc };
}

/**
 * The glibc version the process runs on, from Node's diagnostic report header (a few milliseconds, once; at start
 * there are no sockets whose names the report would look up).
 */
function runningGlibc(): string | undefined {
  const header = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header;
  return header?.glibcVersionRuntime;
}
