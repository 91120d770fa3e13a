/** Child processes of the HTTP and gRPC benchmarks: servers (see child.ts) and load generators. */
import { spawn, type ChildProcess } from 'node:child_process';
import type { ChildMessage, ParentMessage } from './child';

const children: ChildProcess[] = [];


/** Starts `node <script>` (an absolute path) with an IPC channel, pinned to `cpu` with taskset when given. */
export function spawnNode(script: string, cpu: number | undefined, nodeArgs: string[] = []): ChildProcess {
  const args = [...nodeArgs, script];
  const child =
    cpu === undefined
      ? spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
      : spawn('taskset', ['-c', String(cpu), process.execPath, ...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.push(child);
  return child;
}

/** Kills every process spawnNode started that is still running. */
export function killChildren(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}

/** A benchmark server in a child process (see child.ts): its port, its CPU time, and a clean stop. */
export class ServerProc {
  private constructor(
    readonly name: string,
    readonly proc: ChildProcess,
    readonly port: number,
  ) {}

  static start(name: string, script: string, cpu: number | undefined, nodeArgs: string[] = []): Promise<ServerProc> {
    const proc = spawnNode(script, cpu, nodeArgs);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name}: no 'ready' within 15 s`)), 15_000);
      proc.once('exit', (code) => reject(new Error(`${name} exited with code ${code} before it was ready`)));
      proc.on('message', function onMessage(m: ChildMessage) {
        if (m.type === 'ready') {
          clearTimeout(timer);
          proc.off('message', onMessage);
          resolve(new ServerProc(name, proc, m.port));
        } else if (m.type === 'error') {
          clearTimeout(timer);
          reject(new Error(`${name}: ${m.message}`));
        }
      });
    });
  }

  /** CPU time the server process has used so far, in microseconds. */
  cpuMicros(): Promise<number> {
    return new Promise((resolve) => {
      const onMessage = (m: ChildMessage) => {
        if (m.type !== 'cpu') return;
        this.proc.off('message', onMessage);
        resolve(m.user + m.system);
      };
      this.proc.on('message', onMessage);
      this.proc.send({ type: 'cpu' } satisfies ParentMessage);
    });
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      if (this.proc.exitCode !== null) return resolve();
      const timer = setTimeout(() => {
        this.proc.kill('SIGKILL');
        resolve();
      }, 5000);
      this.proc.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      this.proc.send({ type: 'stop' } satisfies ParentMessage);
    });
  }
}
