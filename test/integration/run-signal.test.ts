import { instanceFactory, type Triton, type Request, type Response } from 'tstriton';
import { loopbackTriton } from '../helpers/loopback-triton';

// run() and serve() take an AbortSignal that stops the server, as stop() does.

function server(): Triton {
  const triton = loopbackTriton();
  triton.bind({
    modelName: 'echo',
    inferFunc: async (requests: Request[]): Promise<Response[]> => requests.map((r) => ({ OUTPUT0: r.inputs.INPUT0 as Response[string] })),
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
  });
  return triton;
}

it('serve({ signal }) stops the server in order when the signal aborts, and resolves with exit code 0', async () => {
  const triton = server();
  const controller = new AbortController();
  const served = triton.serve({ signal: controller.signal });
  while (triton.ports.http === undefined || !triton.isReady()) await new Promise((r) => setImmediate(r));
  const port = triton.ports.http;
  expect((await fetch(`http://127.0.0.1:${port}/v2/health/ready`)).status).toBe(200);
  controller.abort();
  expect(await served).toBe(0);
  expect(triton.isLive()).toBe(false);
  await expect(fetch(`http://127.0.0.1:${port}/v2/health/live`)).rejects.toThrow();
  process.exitCode = 0;
});

it('run({ signal }) with an aborted signal refuses to start', async () => {
  const triton = server();
  const controller = new AbortController();
  controller.abort();
  await expect(triton.run({ signal: controller.signal })).rejects.toThrow(/run\(\) was cancelled before the server started/);
  expect(triton.ports.http).toBeUndefined();
});

it('answers inference with 503 saying the server is starting while its models still load, then serves', async () => {
  const triton = loopbackTriton();
  let finishLoading: () => void = () => undefined;
  const loaded = new Promise<void>((resolve) => (finishLoading = resolve));
  triton.bind({
    modelName: 'slow_start',
    inferFunc: instanceFactory(async () => {
      await loaded;
      return async (requests: Request[]): Promise<Response[]> => requests.map((r) => ({ OUTPUT0: r.inputs.INPUT0 as Response[string] }));
    }),
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
  });
  const running = triton.run();
  while (triton.ports.http === undefined) await new Promise((r) => setTimeout(r, 5));
  const infer = () =>
    fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/slow_start/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 1], data: [1] }] }),
    });
  const early = await infer();
  expect(early.status).toBe(503);
  expect(await early.json()).toEqual({ error: 'Server is starting: its models are loading and it accepts no inference yet' });
  expect((await fetch(`http://127.0.0.1:${triton.ports.http}/v2/health/ready`)).status).toBe(400);
  finishLoading();
  await running;
  const served = await infer();
  expect(await served.json()).toMatchObject({ outputs: [{ name: 'OUTPUT0', data: [1] }] });
  await triton.stop();
});
