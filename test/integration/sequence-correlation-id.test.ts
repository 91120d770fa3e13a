import type { Triton, Request } from '../../lib';
import { loopbackTriton } from '../helpers/loopback-triton';

// The range of a sequence's correlation id (`sequence_id`) over HTTP: an integer from 0 to 2^64-1 (UINT64, as
// Triton's CORRID) or a string. Bodies are written by hand, so that a number is sent in the notation under test
// (JSON.stringify writes 1e20 as 21 digits).

let triton: Triton | undefined;

afterEach(async () => {
  await triton?.stop();
  triton = undefined;
});

/** The correlation ids the model was handed, as its CORRID input (UINT64) and as `request.sequence.id`. */
const seen: { corrid: bigint; id: unknown }[] = [];

async function start(): Promise<number> {
  seen.length = 0;
  triton = loopbackTriton();
  triton.bind({
    modelName: 'seq',
    inferFunc: (requests: Request[]) => {
      for (const r of requests) seen.push({ corrid: (r.inputs.CORRID!.data as BigUint64Array)[0]!, id: r.sequence?.id });
      return requests.map((r) => ({ OUTPUT: r.inputs.INPUT! }));
    },
    inputs: [{ name: 'INPUT', dtype: 'INT32', shape: [1] }],
    outputs: [{ name: 'OUTPUT', dtype: 'INT32', shape: [1] }],
    config: {
      maxBatchSize: 4,
      // No sequence is freed as idle while the test runs: on a busy machine, two of its requests can be over a second apart.
      sequenceBatching: { direct: {}, maxSequenceIdleMicroseconds: 600_000_000, controlInput: [{ name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', dataType: 'UINT64' }] }] },
    },
  });
  await triton.run();
  return triton.ports.http as number;
}

/** One infer request whose `sequence_id` is the JSON text `id`, as written. */
async function infer(port: number, id: string, start: boolean): Promise<{ status: number; error?: string }> {
  const body = `{"parameters":{"sequence_id":${id},"sequence_start":${start},"sequence_end":false},"inputs":[{"name":"INPUT","datatype":"INT32","shape":[1,1],"data":[1]}]}`;
  const res = await fetch(`http://127.0.0.1:${port}/v2/models/seq/infer`, { method: 'POST', body });
  const json = (await res.json()) as { error?: string };
  return { status: res.status, ...(json.error !== undefined && { error: json.error }) };
}

describe('sequence_id over HTTP', () => {
  it.each([
    ['1e20', 'a number beyond 2^64, with an exponent'],
    ['1E20', 'the same with a capital E'],
    ['18446744073709551616', '2^64 in digits'],
    ['100000000000000000000', '10^20 in digits'],
    ['1e19', 'an exponent beyond 2^53, below 2^64: a double, which may be rounded'],
    ['1.8446744073709552e19', 'a fraction beyond 2^53'],
    ['9007199254740993.0', '2^53 + 1 with a fraction, which a double rounds'],
    ['1.5', 'a fraction'],
    ['-1', 'a negative integer'],
    ['-1e20', 'a negative exponent'],
    ['-18446744073709551615', 'a negative integer beyond 2^53'],
    ['1e-3', 'a negative exponent'],
    ['true', 'a boolean'],
    ['[1]', 'an array'],
  ])('refuses %s (%s) with 400 naming sequence_id, before the model runs', async (id) => {
    const port = await start();
    const answer = await infer(port, id, true);
    expect([id, answer.status]).toEqual([id, 400]);
    expect(answer.error).toMatch(/^invalid value type for 'sequence_id' parameter, expected int64_param or string_param, got /);
    expect(seen).toEqual([]);
  });

  it('takes every integer from 0 to 2^64-1, in digits, and integers below 2^53 in any notation', async () => {
    const port = await start();
    const max = 2n ** 64n - 1n;
    expect(await infer(port, String(max), true)).toEqual({ status: 200 });
    expect(await infer(port, String(2n ** 53n + 1n), true)).toEqual({ status: 200 });
    // 1e3 is exactly 1000: the same sequence, continued without START.
    expect(await infer(port, '1e3', true)).toEqual({ status: 200 });
    expect(await infer(port, '1000', false)).toEqual({ status: 200 });
    // Slots of the direct strategy that hold no request (id undefined) are left out.
    expect(seen.filter((s) => s.id !== undefined)).toEqual([
      { corrid: max, id: max },
      { corrid: 2n ** 53n + 1n, id: 2n ** 53n + 1n },
      { corrid: 1000n, id: 1000 },
      { corrid: 1000n, id: 1000 },
    ]);
  });
});
