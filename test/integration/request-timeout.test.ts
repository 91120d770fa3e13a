import type { Triton, Request, Response } from 'tstriton';
import { loopbackTriton } from '../helpers/loopback-triton';

// A request's `timeout` parameter beyond what a timer can hold (setTimeout keeps at most 2^31-1 ms, about 24.8
// days, and fires at once past it) means no deadline: the request runs to its answer.

let triton: Triton;
let release!: () => void;

beforeAll(async () => {
  triton = loopbackTriton();
  triton.bind({
    modelName: 'held',
    // Answers once the test releases it, so that a deadline firing at once would be seen first.
    inferFunc: async (requests: Request[]): Promise<Response[]> => {
      await new Promise<void>((resolve) => (release = resolve));
      return requests.map((r) => ({ OUTPUT0: r.inputs.INPUT0 as Response[string] }));
    },
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
    config: {
      maxBatchSize: 8,
      batcher: { defaultQueuePolicy: { allowTimeoutOverride: true, defaultTimeoutMicroseconds: 0, timeoutAction: 'REJECT', maxQueueSize: 0 } },
    },
  });
  await triton.run();
});

afterAll(() => triton.stop());

it.each([2 ** 31 * 1000, 99_999_999_999_999])('a timeout of %d µs does not end the request early', async (timeout) => {
  const answer = fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/held/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ parameters: { timeout }, inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 1], data: [7] }] }),
  });
  // The request is running (its timer, if one fired at once, has had its turn): let it finish.
  while (triton.repository.get('held').liveRequests === 0) await new Promise((r) => setImmediate(r));
  await new Promise((r) => setTimeout(r, 10));
  release();
  const res = await answer;
  expect(await res.json()).toMatchObject({ outputs: [{ name: 'OUTPUT0', data: [7] }] });
  expect(res.status).toBe(200);
});
