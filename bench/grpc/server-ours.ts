/** Our server, as a user would run it: identity_fp32 bound as in examples/identity/model.ts, gRPC only. */
import { Triton } from 'tstriton';
import { bindIdentity } from '../../examples/identity/model';
import { runServerChild } from '../http/child';

runServerChild(async () => {
  const triton = new Triton({ grpcPort: 0, allowHttp: false, allowMetrics: false, logLevel: 'silent', grpcAddress: '127.0.0.1' });
  bindIdentity(triton);
  await triton.run();
  const port = triton.ports.grpc;
  if (port === undefined) throw new Error('the gRPC transport did not start');
  return { port, stop: async () => void (await triton.stop()) };
});
