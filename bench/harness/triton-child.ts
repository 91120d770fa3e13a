/**
 * Our server in a benchmark child, as a user would run it: a `Triton` on 127.0.0.1 (a free port) with one
 * transport, no metrics and silent logs, and the models `bind` adds.
 */
import { Triton } from 'tstriton';
import { runChild } from './child';

const LABEL = { http: 'HTTP', grpc: 'gRPC' } as const;

/** Runs our server over `transport` with the models `bind` adds, until the parent stops it. */
export function runTritonChild(transport: 'http' | 'grpc', bind: (triton: Triton) => void): void {
  runChild(async () => {
    const triton = new Triton(
      transport === 'http'
        ? { httpPort: 0, allowGrpc: false, allowMetrics: false, logLevel: 'silent', httpAddress: '127.0.0.1' }
        : { grpcPort: 0, allowHttp: false, allowMetrics: false, logLevel: 'silent', grpcAddress: '127.0.0.1' },
    );
    bind(triton);
    await triton.run();
    const port = triton.ports[transport];
    if (port === undefined) throw new Error(`the ${LABEL[transport]} transport did not start`);
    return { port, stop: async () => void (await triton.stop()) };
  });
}
