// The server the robustness suites attack, in a process of its own: a crash shows as the process exiting, and
// its memory can be read from /proc/<pid>/status without the test runner's in it. Started by `startServer` in
// helpers.ts with `--require lib/instances/worker/register-ts.js`; its TritonConfig comes as JSON in argv[2].
// Once serving, it sends its ports and limits to its parent over IPC.
import type { Request, Response, Tensor } from '../../lib';
import { loopbackTriton } from '../helpers/loopback-triton';

/** What the server sends its parent once it serves. */
export interface ServerReady {
  readonly http: number;
  readonly grpc: number;
  readonly httpMaxInputSize: number;
  readonly grpcMaxMessageSize: number;
}

const triton = loopbackTriton({
  allowGrpc: true,
  exitTimeoutSeconds: 2,
  ...(JSON.parse(process.argv[2] ?? '{}') as object),
});

// Triton's add_sub: OUTPUT0 = INPUT0 + INPUT1 and OUTPUT1 = INPUT0 - INPUT1, four FP32 values per batch row.
triton.bind({
  modelName: 'add_sub',
  inferFunc: async (requests: Request[]): Promise<Response[]> =>
    requests.map((r) => {
      const a = r.inputs.INPUT0 as Tensor<'FP32'>;
      const b = r.inputs.INPUT1 as Tensor<'FP32'>;
      return {
        OUTPUT0: { dtype: 'FP32', shape: a.shape, data: a.data.map((v, i) => v + (b.data[i] as number)) },
        OUTPUT1: { dtype: 'FP32', shape: a.shape, data: a.data.map((v, i) => v - (b.data[i] as number)) },
      };
    }),
  inputs: [
    { name: 'INPUT0', dtype: 'FP32', shape: [4] },
    { name: 'INPUT1', dtype: 'FP32', shape: [4] },
  ],
  outputs: [
    { name: 'OUTPUT0', dtype: 'FP32', shape: [4] },
    { name: 'OUTPUT1', dtype: 'FP32', shape: [4] },
  ],
  config: { maxBatchSize: 8 },
});

triton.bind({
  modelName: 'identity_bytes',
  inferFunc: async (requests: Request[]): Promise<Response[]> => requests.map((r) => ({ OUTPUT0: r.inputs.INPUT0 as Response[string] })),
  inputs: [{ name: 'INPUT0', dtype: 'BYTES', shape: [-1] }],
  outputs: [{ name: 'OUTPUT0', dtype: 'BYTES', shape: [-1] }],
  config: { maxBatchSize: 8 },
});

triton.bind({
  modelName: 'double_int64',
  inferFunc: async (requests: Request[]): Promise<Response[]> =>
    requests.map((r) => {
      const x = r.inputs.INPUT0 as Tensor<'INT64'>;
      return { OUTPUT0: { dtype: 'INT64', shape: x.shape, data: x.data.map((v) => BigInt.asIntN(64, v * 2n)) } };
    }),
  inputs: [{ name: 'INPUT0', dtype: 'INT64', shape: [-1] }],
  outputs: [{ name: 'OUTPUT0', dtype: 'INT64', shape: [-1] }],
  config: { maxBatchSize: 8 },
});

triton.run().then(
  () => {
    const ready: ServerReady = {
      http: triton.ports.http ?? 0,
      grpc: triton.ports.grpc ?? 0,
      httpMaxInputSize: triton.config.httpMaxInputSize,
      grpcMaxMessageSize: triton.config.grpcMaxMessageSize,
    };
    process.send?.(ready);
  },
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
