import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import type { BindOverrides } from './bind-overrides';
import type { CandidateModuleSpec } from './candidate-module';
import { writeCandidateRepositories } from './candidate-repository';

/** What the servers of a run serve: the user's `--module` files and `--model-repository` folders, absolute. */
export interface ServedSource {
  readonly modules: readonly string[];
  readonly repositories: readonly string[];
}

/** How one candidate's server is started. */
export interface CandidateLaunch {
  readonly source: ServedSource;
  readonly model: string;
  /** The candidate's changes; undefined serves the model as bound. */
  readonly overrides?: BindOverrides;
  /** `--http-thread-count`; undefined leaves the server's default. */
  readonly httpThreadCount?: number;
  /** A folder of its own, for the generated module and repositories. */
  readonly dir: string;
  /** How long the server may take to serve, milliseconds. */
  readonly startTimeoutMs: number;
}

/** A candidate's server: a `tstriton serve` child process on free loopback ports. */
export interface CandidateServer {
  readonly pid: number;
  readonly httpPort: number;
  readonly grpcPort: number;
  /** The models it serves, by name. */
  readonly models: readonly string[];
  /** Stops the server (SIGTERM, then SIGKILL after a grace time); resolves once it has exited. */
  stop(): Promise<void>;
}

/** Servers running now, killed when this process exits however it exits. */
const running = new Set<ChildProcess>();
let exitHookInstalled = false;

/** How long a server is given to drain after SIGTERM before it is killed, milliseconds. */
const STOP_GRACE_MS = 5_000;

/**
 * Starts `tstriton serve` for one candidate, in a child process of the same Node and the same tstriton as this one,
 * on ports the system picks on 127.0.0.1, and resolves once it logs that it serves. A generated `--module` comes
 * first: it applies the candidate to the model as the user's modules bind it (candidate-module.ts); a repository is
 * served through a copy made of links with the model's config.pbtxt rewritten (candidate-repository.ts).
 *
 * @throws Error with the server's last lines of stderr when it exits before serving (a module or repository that
 * does not load), or when it does not serve within `startTimeoutMs` (then it is killed).
 */
export async function startCandidateServer(launch: CandidateLaunch): Promise<CandidateServer> {
  fs.mkdirSync(launch.dir, { recursive: true });
  const args = [...tstritonCommand(), 'serve', ...serveArgs(launch)];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: serverEnv(launch) });
  track(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    }
    running.delete(child);
  };
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
  try {
    const serving = await new Promise<ServingEntry>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the server did not serve within ${Math.round(launch.startTimeoutMs / 1000)} s`)), launch.startTimeoutMs);
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        const entry = parseLogLine(line);
        if (entry?.msg === 'serving') {
          clearTimeout(timer);
          resolve(entry);
        }
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(lastLine(stderr) || `the server exited with ${child.exitCode ?? child.signalCode} before serving`));
      });
    });
    const { http, grpc } = serving.ports ?? {};
    if (http === undefined || grpc === undefined) throw new Error('the server did not name its HTTP and gRPC ports');
    // What the server logs later is not read, but must not fill the pipe and stall it.
    child.stdout?.resume();
    return { pid: child.pid as number, httpPort: http, grpcPort: grpc, models: (serving.models ?? []).map((m) => m.name), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The flags of `tstriton serve` for a candidate. */
function serveArgs(launch: CandidateLaunch): string[] {
  const { source, overrides } = launch;
  const repositories = overrides && source.repositories.length > 0 ? writeCandidateRepositories(source.repositories, launch.model, overrides, launch.dir) : source.repositories;
  // The generated module comes first: it sets up the server for the user's modules after it.
  const spec: CandidateModuleSpec = { model: launch.model, overrides: overrides ?? {}, parentPid: process.pid };
  const file = path.join(launch.dir, 'candidate-module.cjs');
  const module = path.join(__dirname, `candidate-module${path.extname(__filename)}`);
  fs.writeFileSync(file, `'use strict';\n// One tstriton analyze candidate: its model's overrides.\nmodule.exports = require(${JSON.stringify(module)}).candidateModule(${JSON.stringify(spec)});\n`);
  const args = ['--module', file, ...source.modules.flatMap((m) => ['--module', m]), ...repositories.flatMap((r) => ['--model-repository', r])];
  if (launch.httpThreadCount !== undefined) args.push('--http-thread-count', String(launch.httpThreadCount));
  args.push('--http-address', '127.0.0.1', '--grpc-address', '127.0.0.1', '--http-port', '0', '--grpc-port', '0', '--allow-metrics', 'false', '--log-format', 'json', '--log-info', 'true');
  return args;
}

/** This process's environment for the server, without the settings a candidate decides or the ports. */
function serverEnv(launch: CandidateLaunch): NodeJS.ProcessEnv {
  const env = { ...process.env };
  if (launch.httpThreadCount !== undefined) delete env.TSTRITON_HTTP_THREAD_COUNT;
  return env;
}

/** `node` arguments that run this tstriton's command line: the compiled file, or the sources with their TypeScript hook. */
export function tstritonCommand(): string[] {
  const ext = path.extname(__filename);
  const main = path.join(__dirname, '..', 'cli', `main${ext}`);
  return ext === '.ts' ? ['--require', path.join(__dirname, '..', 'instances', 'worker', 'register-ts.js'), main] : [main];
}

function track(child: ChildProcess): void {
  running.add(child);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const c of running) c.kill('SIGKILL');
  });
}

/** The server's "serving" log line: its ports and models. */
interface ServingEntry {
  readonly msg?: string;
  readonly ports?: Record<string, number>;
  readonly models?: readonly { readonly name: string }[];
}

function parseLogLine(line: string): ServingEntry | undefined {
  try {
    return JSON.parse(line) as ServingEntry;
  } catch {
    return undefined;
  }
}

/** The last non-empty line of a process's stderr, without the `tstriton: ` prefix of the command line's errors. */
function lastLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  return (lines[lines.length - 1] ?? '').replace(/^tstriton: /, '');
}
