import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { spawnTracked } from './resources';

/** A server in a child process, found through its "serving" log line. */
export interface ServingChild {
  child: ChildProcess;
  /** The ports the "serving" line names, by endpoint (http, grpc, metrics). */
  ports: Record<string, number>;
  exited: Promise<number | null>;
}

/**
 * Runs `node args` and resolves once it logs its "serving" line (JSON lines on stdout); rejects with what it wrote
 * on stderr if it exits before. The child is tracked (resources.ts): stopped after the test, or after the file when
 * started in a beforeAll, even if the hook that waits for it times out; and it exits if this process dies.
 */
export function spawnServing(args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<ServingChild> {
  const child = spawnTracked(process.execPath, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const entry = JSON.parse(line) as { msg?: string; ports?: Record<string, number> };
      if (entry.msg === 'serving') resolve({ child, ports: entry.ports ?? {}, exited });
    });
    void exited.then((code) => reject(new Error(`the server exited with ${code} before serving: ${stderr}`)));
  });
}
