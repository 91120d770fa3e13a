/**
 * The server child of bench:flood: one `Triton` serving gRPC on 127.0.0.1 (a free port, no HTTP, no metrics,
 * silent logs) on `httpThreadCount` front-end threads (argv[2], a `FloodServerConfig` as JSON), with one model,
 * `flood_sequence`: sequence_accumulate's running sum (implicit state) behind a sequence batcher of 2,048
 * candidate sequences that idle out after 300 ms, with the `oldest` or the `direct` strategy.
 *
 * Calls from the parent: `threads`, each thread's heap as V8 and Node count it (the core thread's own, and each
 * front-end thread's, read through the inspector: thread-inspector.ts); `snapshot`, a heap snapshot of every
 * thread written to a folder.
 */
import { createWriteStream, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import * as v8 from 'node:v8';
import { Triton } from 'tstriton';
import { SequenceAccumulate } from '../../examples/sequence/model';
import { runChild } from '../harness/child';
import { ThreadInspector } from '../harness/thread-inspector';

/** The model's name, as the parent sends it. */
export const FLOOD_MODEL = 'flood_sequence';
/** Sequences the batcher holds at once: beyond them, STARTs wait in its backlog for a slot. */
export const CANDIDATE_SEQUENCES = 2048;
/** A sequence that gets no request for this long ends, and its slot goes to the oldest backlogged one. */
export const IDLE_MICROSECONDS = 300_000;

/** What the parent passes as argv[2] (JSON). */
export interface FloodServerConfig {
  /** `httpThreadCount`: 1 serves the port on the core thread; N ≥ 2 on N front-end threads. */
  frontEndThreads: number;
  strategy: 'oldest' | 'direct';
  /** The server's `idleCollectionMegabytes`; its default when absent. */
  idleCollectionMegabytes?: number;
}

/** One thread's memory: V8's heap (used and committed, its young generation apart) and what lives outside it. */
export interface ThreadMemory {
  thread: string;
  heapUsed: number;
  heapTotal: number;
  /** The young generation's committed size (V8's `new_space`): up to 3 × `--max-semi-space-size` per isolate. */
  newSpace: number;
  external: number;
  arrayBuffers: number;
}

/** What the parent may ask. */
export type FloodServerCall = { op: 'threads' } | { op: 'snapshot'; dir: string; label: string };

/** Evaluated in each thread: its memory, as JSON carries it. */
const MEMORY_PROBE = `(() => {
  const v8 = process.getBuiltinModule('node:v8');
  const m = process.memoryUsage();
  const space = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  return { heapUsed: m.heapUsed, heapTotal: m.heapTotal, newSpace: space ? space.space_size : 0, external: m.external, arrayBuffers: m.arrayBuffers };
})()`;

/** Each thread's memory: the core thread's (this one), then each front-end thread's. */
async function memory(threads: ThreadInspector): Promise<ThreadMemory[]> {
  const out: ThreadMemory[] = [{ thread: 'core', ...((0, eval)(MEMORY_PROBE) as Omit<ThreadMemory, 'thread'>) }];
  for (const thread of threads.frontEnds()) out.push({ thread, ...(await threads.evaluate<Omit<ThreadMemory, 'thread'>>(thread, MEMORY_PROBE)) });
  return out;
}

/** Writes a heap snapshot of the core thread and of each front-end thread into `dir`; resolves with the files. */
async function snapshot(threads: ThreadInspector, dir: string, label: string): Promise<string[]> {
  mkdirSync(dir, { recursive: true });
  const files = [v8.writeHeapSnapshot(path.join(dir, `${label}-core.heapsnapshot`))];
  for (const thread of threads.frontEnds()) {
    const file = path.join(dir, `${label}-${thread}.heapsnapshot`);
    const out = createWriteStream(file);
    await threads.send(thread, 'HeapProfiler.takeHeapSnapshot', { reportProgress: false }, (method, params) => {
      if (method === 'HeapProfiler.addHeapSnapshotChunk') out.write((params as { chunk: string }).chunk);
    });
    await new Promise<void>((resolve) => out.end(resolve));
    files.push(file);
  }
  return files;
}

if (require.main === module) {
  runChild(async () => {
    const cfg = JSON.parse(process.argv[2] ?? '{"frontEndThreads":1,"strategy":"oldest"}') as FloodServerConfig;
    if (!(Number.isInteger(cfg.frontEndThreads) && cfg.frontEndThreads >= 1)) throw new Error(`expected { frontEndThreads: N ≥ 1 }, got ${process.argv[2]}`);
    const triton = new Triton({
      // Set even for 1: the default (0) would pick a thread count by the machine's cores.
      httpThreadCount: cfg.frontEndThreads,
      allowHttp: false,
      grpcPort: 0,
      allowMetrics: false,
      logLevel: 'silent',
      grpcAddress: '127.0.0.1',
      ...(cfg.idleCollectionMegabytes === undefined ? {} : { idleCollectionMegabytes: cfg.idleCollectionMegabytes }),
    });
    const oldest = cfg.strategy === 'oldest';
    triton.bind({
      modelName: FLOOD_MODEL,
      inferFunc: new SequenceAccumulate(),
      inputs: [{ name: 'INPUT', dtype: 'INT32', shape: [1] }],
      outputs: [{ name: 'OUTPUT', dtype: 'INT32', shape: [1] }],
      config: {
        // Direct holds one sequence per batch row: its 2,048 candidates are 2,048 rows.
        maxBatchSize: oldest ? 8 : CANDIDATE_SEQUENCES,
        sequenceBatching: {
          ...(oldest ? { oldest: { maxCandidateSequences: CANDIDATE_SEQUENCES } } : { direct: {} }),
          maxSequenceIdleMicroseconds: IDLE_MICROSECONDS,
          state: [{ inputName: 'INPUT_STATE', outputName: 'OUTPUT_STATE', dtype: 'INT32', dims: [1], initialState: [{ name: 'zero', dtype: 'INT32', dims: [1], zeroData: true }] }],
        },
      },
      strict: true,
    });
    await triton.run();
    const { grpc } = triton.ports;
    if (grpc === undefined) throw new Error(`expected a gRPC port, got ${JSON.stringify(triton.ports)}`);
    const threads = await ThreadInspector.attach();
    const call = async (payload: unknown): Promise<unknown> => {
      const c = payload as FloodServerCall;
      if (c.op === 'threads') return memory(threads);
      if (c.op === 'snapshot') return snapshot(threads, c.dir, c.label);
      throw new Error(`unknown call ${JSON.stringify(payload)}`);
    };
    return {
      port: grpc,
      call,
      stop: async () => {
        threads.close();
        await triton.stop();
      },
    };
  });
}
