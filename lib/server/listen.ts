import type { AddressInfo, Server } from 'node:net';

/** Starts a server (node:http, node:https) on `host:port` (port 0 picks a free one); resolves with the bound port. */
export function listenOn(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
