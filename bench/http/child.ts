/**
 * The IPC side of a server child: reports its port once listening, answers CPU-time queries, and stops
 * (exiting cleanly, so `--cpu-prof` can write its profile) when told to.
 */

export interface ServerHandle {
  port: number;
  stop(): Promise<void>;
}

export type ChildMessage = { type: 'ready'; port: number } | { type: 'cpu'; user: number; system: number } | { type: 'error'; message: string };
export type ParentMessage = { type: 'cpu' } | { type: 'stop' };

export function runServerChild(start: () => Promise<ServerHandle>): void {
  const send = (m: ChildMessage) => process.send?.(m);
  start().then(
    (handle) => {
      process.on('message', (m: ParentMessage) => {
        if (m.type === 'cpu') {
          const { user, system } = process.cpuUsage();
          send({ type: 'cpu', user, system });
        } else if (m.type === 'stop') {
          void handle.stop().finally(() => process.exit(0));
        }
      });
      // The parent going away must not leave a server behind.
      process.on('disconnect', () => process.exit(0));
      send({ type: 'ready', port: handle.port });
    },
    (err: unknown) => {
      send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
      process.exit(1);
    },
  );
}
