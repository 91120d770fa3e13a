/** Our server, as a user would run it: identity_fp32 bound as in examples/identity/model.ts, gRPC only. */
import { bindIdentity } from '../../examples/identity/model';
import { runTritonChild } from '../harness/triton-child';

runTritonChild('grpc', bindIdentity);
