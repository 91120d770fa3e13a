/** Our server, as a user would run it: identity_fp32 bound as in examples/identity/model.ts, HTTP only. */
import { Triton } from 'tstriton';
import { bindIdentity } from '../../examples/identity/model';
import { runServerChild } from './child';

runServerChild(async () => {
  const triton = new Triton({ httpPort: 0, allowGrpc: false, allowMetrics: false, logLevel: 'silent', httpAddress: '127.0.0.1' });
  bindIdentity(triton);
  await triton.run();
  const port = triton.ports.http;
  if (port === undefined) throw new Error('the HTTP transport did not start');
  return { port, stop: async () => void (await triton.stop()) };
});
