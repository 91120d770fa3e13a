import { ChildProcess } from 'node:child_process';
import { Server, Socket } from 'node:net';
import workerThreads, { type Worker, type WorkerOptions } from 'node:worker_threads';
import type { Circus } from '@jest/types';
import type { EnvironmentContext, JestEnvironmentConfig } from '@jest/environment';
import { TestEnvironment } from 'jest-environment-node';

/**
 * How long what a file's last hook began stopping may take to be gone: a child process that got SIGTERM exiting, a
 * client socket seeing the server's FIN. Past it, what is still open was left open.
 */
const SETTLE_MS = 3_000;

/** Worker threads do not show in process._getActiveHandles(); this map holds the live ones, with their module. */
const liveWorkers = trackWorkerThreads();

/**
 * jest's node environment plus an open-handle check per test file: once the file's last afterAll has run, every
 * server, socket, child process and worker thread the file opened must be gone. What is left is named in a failure of
 * the file, then closed (servers, sockets), killed (child processes, SIGKILL) or terminated (worker threads), so that
 * the next file starts clean and jest can exit. On a 2-core machine jest runs every file in its main process (in
 * band: one worker or fewer), where three OTLP receivers and their child processes, left behind by a timed-out
 * beforeEach, kept it running for over 30 minutes after its last report.
 *
 * It also sets the project's timeout (`testEnvironmentOptions.testTimeout` in jest.config.js), unless the command
 * line gave one. jest loads a test environment by its default export.
 */
export default class WatchdogEnvironment extends TestEnvironment {
  /** The handles open before the file ran (jest's own, and a previous file's that are still closing). */
  private before = new Set<object>();
  private readonly testTimeout: number | undefined;

  constructor(config: JestEnvironmentConfig, context: EnvironmentContext) {
    super(config, context);
    const own = config.projectConfig.testEnvironmentOptions.testTimeout;
    this.testTimeout = config.globalConfig.testTimeout === undefined && typeof own === 'number' ? own : undefined;
  }

  override async setup(): Promise<void> {
    await super.setup();
    this.before = new Set(openHandles());
  }

  // 'setup' comes before the file's top level runs, so its jest.setTimeout() still wins. 'run_finish' comes after the
  // file's last afterAll; an error pushed onto unhandledErrors fails the file and is printed with its results.
  async handleTestEvent(event: Circus.Event, state: Circus.State): Promise<void> {
    if (event.name === 'setup' && this.testTimeout !== undefined) state.testTimeout = this.testTimeout;
    if (event.name !== 'run_finish') return;
    const left = await leftOpen(this.before);
    if (left.length === 0) return;
    const names = namesOf(left);
    for (const handle of left) forceClose(handle);
    const err = new Error(
      `open handles after the file's last afterAll (the watchdog in test/helpers/watchdog-environment.ts closed them; ` +
        `stop what a hook starts with track() from test/helpers/resources.ts):\n  - ${names.join('\n  - ')}`,
    );
    err.stack = err.message;
    state.unhandledErrors.push(err);
  }
}

/** Servers, sockets, child processes and worker threads open now. */
function openHandles(): object[] {
  const handles = (process as unknown as { _getActiveHandles(): object[] })._getActiveHandles();
  return [...handles, ...liveWorkers.keys()];
}

/** What is open and was not before, once it has had SETTLE_MS to close. */
async function leftOpen(before: Set<object>): Promise<object[]> {
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const left = openHandles().filter((h) => !before.has(h));
    if (left.length === 0 || Date.now() >= deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One line per handle; a child process's stdio pipes go with the child rather than on lines of their own. */
function namesOf(handles: object[]): string[] {
  const pipes = new Set<unknown>(handles.flatMap((h) => (h instanceof ChildProcess ? [...h.stdio] : [])));
  return handles.filter((h) => !pipes.has(h)).map(nameOf);
}

function nameOf(handle: object): string {
  if (handle instanceof ChildProcess) return `child process ${handle.pid} still running: ${handle.spawnargs.join(' ').slice(0, 300)}`;
  if (handle instanceof Server) {
    const address = handle.address();
    return `server still listening on ${typeof address === 'string' || address === null ? String(address) : `${address.address}:${address.port}`}`;
  }
  if (handle instanceof Socket) {
    if (handle.remotePort === undefined) return 'socket or pipe still open (no remote address)';
    return `socket still open: ${handle.localAddress}:${handle.localPort} -> ${handle.remoteAddress}:${handle.remotePort}`;
  }
  const worker = liveWorkers.get(handle as Worker);
  if (worker !== undefined) return `worker thread ${(handle as Worker).threadId} still running: ${worker}`;
  return `${handle.constructor.name} still open`;
}

function forceClose(handle: object): void {
  if (handle instanceof ChildProcess) handle.kill('SIGKILL');
  else if (handle instanceof Server) {
    (handle as Partial<{ closeAllConnections(): void }>).closeAllConnections?.();
    handle.close();
  } else if (handle instanceof Socket) handle.destroy();
  else if (liveWorkers.has(handle as Worker)) void (handle as Worker).terminate();
  else (handle as Partial<{ close(): void }>).close?.();
}

/**
 * Replaces node:worker_threads' Worker with a subclass that records each live thread. Test files share the core module
 * with this environment (jest does not sandbox core modules), and code reads `Worker` from the module when it
 * constructs one, so threads the lib starts are recorded. Done once per process: jest loads the environment per file.
 */
function trackWorkerThreads(): Map<Worker, string> {
  const key = Symbol.for('tstriton.test.liveWorkers');
  const shared = globalThis as unknown as Record<symbol, Map<Worker, string> | undefined>;
  const existing = shared[key];
  if (existing) return existing;
  const live = new Map<Worker, string>();
  const Original = workerThreads.Worker;
  class TrackedWorker extends Original {
    constructor(filename: string | URL, options?: WorkerOptions) {
      super(filename, options);
      live.set(this, options?.eval ? 'inline source' : String(filename));
      this.once('exit', () => live.delete(this));
    }
  }
  (workerThreads as { Worker: typeof Original }).Worker = TrackedWorker;
  shared[key] = live;
  return live;
}
