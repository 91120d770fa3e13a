import type { AddressInfo, Server } from 'node:net';

/**
 * Starts a server (node:http, node:https) on `host:port` (port 0 picks a free one); resolves with the bound port.
 * With `reusePort`, several threads may listen on the same port, and the kernel spreads connections over them.
 */
export function listenOn(server: Server, port: number, host: string, reusePort = false): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, ...(reusePort ? { reusePort } : {}) }, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
