import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Request, Response } from '../../lib';
import { loopbackTriton } from '../helpers/loopback-triton';

describe('trace extension', () => {
  it('traces the sampled requests into the trace file, with per-model settings over HTTP', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'trace-'));
    const file = path.join(dir, 'trace.json');
    const triton = loopbackTriton({ traceFile: file });
    const echo = async (rs: Request[]): Promise<Response[]> => rs.map((r) => ({ y: r.inputs.x! }));
    const io = { inputs: [{ name: 'x', dtype: 'FP32' as const, shape: [-1] }], outputs: [{ name: 'y', dtype: 'FP32' as const, shape: [-1] }] };
    triton.bind({ modelName: 'traced', inferFunc: echo, ...io });
    triton.bind({ modelName: 'quiet', inferFunc: echo, ...io });
    await triton.run();
    const base = `http://127.0.0.1:${triton.ports.http}`;
    const post = (p: string, body: unknown) => fetch(`${base}${p}`, { method: 'POST', body: JSON.stringify(body) });
    const infer = (model: string, id: string) => post(`/v2/models/${model}/infer`, { id, inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 1], data: [1] }] });
    try {
      expect(await (await fetch(`${base}/v2/trace/setting`)).json()).toMatchObject({ trace_level: ['OFF'], trace_file: file, trace_mode: 'triton' });
      const set = await post('/v2/models/traced/trace/setting', { trace_level: ['TIMESTAMPS'], trace_rate: '1' });
      expect(set.status).toBe(200);
      expect(await set.json()).toMatchObject({ trace_level: ['TIMESTAMPS'], trace_rate: '1' });
      expect(((await (await fetch(`${base}/v2/trace/setting`)).json()) as { trace_level: string[] }).trace_level).toEqual(['OFF']);
      for (const id of ['a', 'b', 'c']) {
        expect((await infer('traced', id)).status).toBe(200);
        expect((await infer('quiet', id)).status).toBe(200);
      }
      expect((await post('/v2/trace/setting', { trace_file: '/tmp/elsewhere' })).status).toBe(501);
      expect((await post('/v2/models/nope/trace/setting', { trace_rate: '1' })).status).toBe(400);
    } finally {
      await triton.stop();
    }
    const traces = JSON.parse(fs.readFileSync(file, 'utf8')) as { model_name: string; request_id: string; timestamps: { name: string; ns: number }[] }[];
    expect(traces.map((t) => [t.model_name, t.request_id])).toEqual([
      ['traced', 'a'],
      ['traced', 'b'],
      ['traced', 'c'],
    ]);
    for (const t of traces) {
      const ns = t.timestamps.map((s) => s.ns);
      expect(ns).toEqual([...ns].sort((x, y) => x - y));
      expect(ns[ns.length - 1]! - ns[0]!).toBeGreaterThan(0);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
