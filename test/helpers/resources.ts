import { ChildProcess, fork, spawn, type ForkOptions, type SpawnOptions } from 'node:child_process';
import { Server } from 'node:net';
import { join } from 'node:path';

/**
 * What a test starts and must stop: a child process, a server (node:net, node:http), or anything with `stop()` (a
 * Triton) or `close()`.
 */
export type Closeable = ChildProcess | Server | { stop(): unknown } | { close(): unknown };

/** How long a child process has to exit after SIGTERM before it gets SIGKILL. */
const CHILD_GRACE_MS = 5_000;
/** How long a child process has to be gone after SIGKILL. */
const KILL_WAIT_MS = 2_000;
/** How long one `stop()` or `close()` may take before the hook fails naming it (a Triton drains up to a few seconds). */
const CLOSE_LIMIT_MS = 15_000;

const forTest: Closeable[] = [];
const forFile: Closeable[] = [];
let inTest = false;

/**
 * Registers `resource` to be stopped after the current test (when called from a test or its beforeEach) or after the
 * file's last test (from a beforeAll or at the top level): jest runs those hooks even when the hook that started the
 * resource timed out or threw, which a variable assigned after an `await` cannot promise. Returns `resource`.
 *
 * Resources stop in the reverse order of tracking, each bounded; stopping one that has already stopped is a no-op.
 */
export function track<T extends Closeable>(resource: T): T {
  (inTest ? forTest : forFile).push(resource);
  return resource;
}

/** `spawn` whose child is tracked and exits with its parent (see exit-with-parent.js). */
export function spawnTracked(command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
  return track(spawn(command, args, { ...options, env: exitingWithParent(options.env ?? process.env) }));
}

/** `fork` whose child is tracked and exits with its parent (see exit-with-parent.js). */
export function forkTracked(modulePath: string, args: readonly string[], options: ForkOptions = {}): ChildProcess {
  return track(fork(modulePath, args, { ...options, env: exitingWithParent(options.env ?? process.env) }));
}

const EXIT_WITH_PARENT = join(__dirname, 'exit-with-parent.js');

/**
 * `env` with NODE_OPTIONS preloading exit-with-parent.js, for a node child process started some other way (execFile):
 * if this process dies, the child follows instead of keeping its ports.
 */
export function exitingWithParent(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const preload = `--require "${EXIT_WITH_PARENT}"`;
  return { ...env, NODE_OPTIONS: env.NODE_OPTIONS ? `${env.NODE_OPTIONS} ${preload}` : preload };
}

/** Called by track-hooks.ts before each test's hooks: what is tracked from now on is the test's. */
export function enterTest(): void {
  inTest = true;
}

/**
 * Stops what the test (`'test'`) or the file (`'file'`) tracked, newest first; throws naming each one that did not stop,
 * after trying them all. Called by track-hooks.ts in afterEach and afterAll.
 */
export async function releaseTracked(scope: 'test' | 'file'): Promise<void> {
  if (scope === 'test') inTest = false;
  const failures: string[] = [];
  for (const resource of (scope === 'test' ? forTest : forFile).splice(0).reverse()) {
    try {
      if (!(await within(stop(resource), CLOSE_LIMIT_MS))) failures.push(`${nameOf(resource)}: still stopping after ${CLOSE_LIMIT_MS} ms`);
    } catch (err) {
      failures.push(`${nameOf(resource)}: ${(err as Error).message}`);
    }
  }
  if (failures.length > 0) throw new Error(`what the ${scope} started did not stop:\n  ${failures.join('\n  ')}`);
}

async function stop(resource: Closeable): Promise<void> {
  if (resource instanceof ChildProcess) return endChild(resource);
  if (resource instanceof Server) return closeServer(resource);
  if ('stop' in resource) await resource.stop();
  else await resource.close();
}

/** SIGTERM, then SIGKILL once the grace is over; resolves when the process is gone. */
async function endChild(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  if (await within(exited, CHILD_GRACE_MS)) return;
  child.kill('SIGKILL');
  if (!(await within(exited, KILL_WAIT_MS))) throw new Error(`no exit ${KILL_WAIT_MS} ms after SIGKILL`);
}

/** Closes the listener and every connection it still holds (an idle keep-alive connection would hold close() open). */
function closeServer(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  (server as Partial<{ closeAllConnections(): void }>).closeAllConnections?.();
  return closed;
}

/** True when `p` settles within `ms`; rethrows its rejection. */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

function nameOf(resource: Closeable): string {
  if (resource instanceof ChildProcess) return `child process ${resource.pid ?? '(not started)'} (${resource.spawnargs.join(' ').slice(0, 200)})`;
  if (resource instanceof Server) return `server ${JSON.stringify(resource.address())}`;
  return resource.constructor.name;
}
