import * as grpc from '@grpc/grpc-js';
import { type Triton, tensor, type Request, type Response } from '../../lib';
import { loadProtos } from '../../lib/protocol/protos';
import type { ModelInferRequestMessage, ModelStreamInferResponseMessage } from '../../lib/protocol/messages';
import type { RequestScheduler } from '../../lib/scheduler/request-scheduler';
import { ThreadInspector } from '../../bench/harness/thread-inspector';
import { track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

// A front-end thread hands each inference request to the core thread and, while the core runs it, keeps only what
// answering it needs: its sink and its cancellation. It used to keep the decoded request as well (the listener on
// its cancellation closed over it), so that a flood of requests that wait long in the core — sequences backlogged
// behind their slots — was held twice, once in the core thread and once in its front-end thread.
//
// Counted in the front-end threads themselves (the inspector attaches to them: bench/harness/thread-inspector.ts):
// after a full collection, the typed arrays of the requests' size each thread holds while the core holds the
// requests: a decoded request's tensor (a Float32Array), and the message's bytes as the stream read them (a Buffer),
// which the stream kept until the answer as well. Nothing else on a front-end thread has that size.

const THREADS = 2;
/** Requests held in the core at once, all on one stream. */
const WAITING = 200;
/** Elements of each request's tensor (one row of them): 4,000 bytes, small enough to cross in the hand-off's records. */
const LENGTH = 1000;

const services = loadProtos('number');

/**
 * Live typed arrays of `bytes` bytes in `thread` whose prototype chain holds `prototype` (an expression there:
 * `Float32Array.prototype`, or `Uint8Array.prototype` for Buffers too), after a full collection there.
 */
async function viewsOf(threads: ThreadInspector, thread: string, prototype: string, bytes: number): Promise<number> {
  const group = { objectGroup: 'retention-test' };
  await threads.send(thread, 'HeapProfiler.collectGarbage');
  const proto = await threads.send<{ result: { objectId: string } }>(thread, 'Runtime.evaluate', { expression: prototype, ...group });
  const found = await threads.send<{ objects: { objectId: string } }>(thread, 'Runtime.queryObjects', { prototypeObjectId: proto.result.objectId, ...group });
  const counted = await threads.send<{ result: { value: number } }>(thread, 'Runtime.callFunctionOn', {
    objectId: found.objects.objectId,
    // Prototypes down the chain (Buffer's) are among the objects found, and have no byteLength of their own.
    functionDeclaration: 'function (n) { return this.filter((a) => ArrayBuffer.isView(a) && a.byteLength === n).length; }',
    arguments: [{ value: bytes }],
    returnByValue: true,
  });
  await threads.send(thread, 'Runtime.releaseObjectGroup', group);
  return counted.result.value;
}

describe(`a request handed to the core thread from one of ${THREADS} front-end threads`, () => {
  let triton: Triton;
  let threads: ThreadInspector;
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));

  beforeAll(async () => {
    triton = track(loopbackTriton({ allowGrpc: true, httpThreadCount: THREADS, allowHttp: false }));
    // Holds every request until the test opens the gate: they wait in the core, queued or running.
    triton.bind({
      modelName: 'held',
      inferFunc: async (requests: Request[]): Promise<Response[]> => {
        await gate;
        return requests.map((r) => ({ y: tensor('FP32', r.inputs.x!.shape, r.inputs.x!.data as Float32Array) }));
      },
      inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
    });
    await triton.run();
    threads = track(await ThreadInspector.attach());
  });

  it('is not kept by the front-end thread while the core runs it', async () => {
    expect(threads.frontEnds()).toHaveLength(THREADS);
    const client = track(new grpc.Client(`127.0.0.1:${triton.ports.grpc}`, grpc.credentials.createInsecure()));
    const def = services.inference.ModelStreamInfer as grpc.MethodDefinition<ModelInferRequestMessage, ModelStreamInferResponseMessage>;
    const call = client.makeBidiStreamRequest(def.path, def.requestSerialize, def.responseDeserialize);
    const answers: ModelStreamInferResponseMessage[] = [];
    const ended = new Promise<void>((resolve, reject) => {
      call.on('data', (m: ModelStreamInferResponseMessage) => answers.push(m));
      call.on('error', reject);
      call.on('end', resolve);
    });
    const raw = Buffer.from(new Float32Array(LENGTH).fill(1).buffer);
    for (let i = 0; i < WAITING; i++) {
      call.write({ model_name: 'held', id: String(i), inputs: [{ name: 'x', datatype: 'FP32', shape: [1, LENGTH] }], raw_input_contents: [raw] } as unknown as ModelInferRequestMessage);
    }
    call.end();
    const scheduler = (triton as unknown as { repository: { get(n: string): { scheduler: RequestScheduler<unknown> } } }).repository.get('held').scheduler;
    // Polls the core until it holds every request (queued or running); each has then left its front-end thread.
    while (scheduler.outstanding < WAITING && answers.length === 0) await new Promise((r) => setTimeout(r, 10));
    expect(answers).toEqual([]);

    try {
      // Neither the decoded tensors nor the bytes of the messages they came in (views of the stream's data).
      const none = threads.frontEnds().map(() => 0);
      expect(await Promise.all(threads.frontEnds().map((t) => viewsOf(threads, t, 'Float32Array.prototype', LENGTH * 4)))).toEqual(none);
      expect(await Promise.all(threads.frontEnds().map((t) => viewsOf(threads, t, 'Uint8Array.prototype', LENGTH * 4)))).toEqual(none);
    } finally {
      // Answered either way, so that the server stops.
      open();
      await ended;
    }
    expect(answers.filter((a) => a.error_message === '' && a.infer_response?.outputs[0]?.name === 'y')).toHaveLength(WAITING);
  });
});
