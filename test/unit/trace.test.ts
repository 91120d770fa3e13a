import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Tracer } from '../../lib/trace';

const scheduled = { value: undefined, queueNs: 1000, computeInputNs: 2000, computeInferNs: 3000, computeOutputNs: 4000, batchRows: 1 };

describe('Tracer', () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'trace-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("reports Triton's defaults, every value a string", () => {
    expect(new Tracer(undefined).settings()).toEqual({ trace_level: ['OFF'], trace_rate: '1000', trace_count: '-1', log_frequency: '0', trace_file: '', trace_mode: 'triton' });
  });

  it('writes one trace in every trace_rate requests, up to trace_count, as a JSON array with ordered timestamps', () => {
    const file = path.join(dir, 'trace.json');
    const t = new Tracer(file);
    expect(t.settings(undefined, { trace_level: ['TIMESTAMPS'], trace_rate: '2', trace_count: '2' })).toMatchObject({ trace_level: ['TIMESTAMPS'], trace_rate: '2', trace_count: '2', trace_file: file });
    for (let i = 0; i < 8; i++) t.record('m', '1', `r${i}`, performance.now(), scheduled);
    t.close();
    const traces = JSON.parse(fs.readFileSync(file, 'utf8')) as { id: number; model_name: string; request_id: string; timestamps: { name: string; ns: number }[] }[];
    expect(traces.map((x) => x.request_id)).toEqual(['r1', 'r3']);
    expect(t.settings().trace_count).toBe('0');
    const stamps = traces[0]!.timestamps;
    expect(stamps.map((s) => s.name)).toEqual(['REQUEST_START', 'QUEUE_START', 'COMPUTE_START', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START', 'COMPUTE_END', 'REQUEST_END']);
    for (let i = 1; i < stamps.length; i++) expect(stamps[i]!.ns).toBeGreaterThanOrEqual(stamps[i - 1]!.ns);
    expect(stamps[2]!.ns - stamps[1]!.ns).toBe(1000);
    expect(stamps[5]!.ns - stamps[2]!.ns).toBe(9000);
  });

  it('lets a model override settings and clear them with null', () => {
    const t = new Tracer(path.join(dir, 't.json'));
    t.settings('m', { trace_rate: '5' });
    expect(t.settings('m').trace_rate).toBe('5');
    expect(t.settings().trace_rate).toBe('1000');
    expect(t.settings('m', { trace_rate: null }).trace_rate).toBe('1000');
  });

  it('refuses what it cannot do, changing nothing', () => {
    const noFile = new Tracer(undefined);
    expect(() => noFile.settings(undefined, { trace_level: ['TIMESTAMPS'] })).toThrow('trace_level TIMESTAMPS needs a trace file: start the server with traceFile (TSTRITON_TRACE_FILE)');
    const t = new Tracer(path.join(dir, 't.json'));
    expect(() => t.settings(undefined, { trace_file: '/tmp/x' })).toThrow('trace file location can not be updated through network protocol');
    expect(() => t.settings(undefined, { trace_level: ['TENSORS'] })).toThrow(/TENSORS is not supported/);
    expect(() => t.settings(undefined, { trace_mode: 'opentelemetry' })).toThrow(/trace_mode 'opentelemetry' is not supported/);
    expect(() => t.settings(undefined, { trace_rate: '0' })).toThrow('trace_rate must be an integer >= 1, got "0"');
    expect(() => t.settings(undefined, { trace_rate: null })).toThrow(/cannot be cleared for the server/);
    expect(() => t.settings(undefined, { trace_rate: '3', trace_colour: 'x' })).toThrow(/unknown trace setting 'trace_colour'/);
    expect(t.settings().trace_rate).toBe('1000');
  });
});
