import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Tracer } from '../../lib/tracing/trace';

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
    expect(() => noFile.settings(undefined, { trace_level: ['TIMESTAMPS'] })).toThrow('trace_level TIMESTAMPS needs a trace file: start the server with traceFile (TSTRITON_TRACE_FILE), or use trace_mode opentelemetry');
    const t = new Tracer(path.join(dir, 't.json'));
    expect(() => t.settings(undefined, { trace_file: '/tmp/x' })).toThrow('trace file location can not be updated through network protocol');
    expect(() => t.settings(undefined, { trace_level: ['TENSORS'] })).toThrow(/TENSORS is not supported/);
    expect(() => t.settings(undefined, { trace_mode: 'zipkin' })).toThrow('trace_mode must be triton or opentelemetry, got "zipkin"');
    expect(() => t.settings(undefined, { trace_rate: '0' })).toThrow('trace_rate must be an integer >= 1, got "0"');
    expect(() => t.settings(undefined, { trace_rate: null })).toThrow(/cannot be cleared for the server/);
    expect(() => t.settings(undefined, { trace_rate: '3', trace_colour: 'x' })).toThrow(/unknown trace setting 'trace_colour'/);
    expect(t.settings().trace_rate).toBe('1000');
  });

  it('opentelemetry mode needs no trace file, in either order of mode and level, for the server or a model', () => {
    const t = new Tracer(undefined);
    expect(t.settings(undefined, { trace_level: ['TIMESTAMPS'], trace_mode: 'opentelemetry' })).toMatchObject({ trace_level: ['TIMESTAMPS'], trace_mode: 'opentelemetry' });
    // Back to triton mode with TIMESTAMPS and no file: refused, nothing changes.
    expect(() => t.settings(undefined, { trace_mode: 'triton' })).toThrow(/needs a trace file/);
    expect(t.settings().trace_mode).toBe('opentelemetry');
    expect(t.settings('m', { trace_mode: ['triton'], trace_level: ['OFF'] })).toMatchObject({ trace_level: ['OFF'], trace_mode: 'triton' });
    expect(t.settings().trace_mode).toBe('opentelemetry');
  });

  it('reads Triton --trace-config entries, and refuses unknown ones', () => {
    const t = new Tracer(undefined, 'mode=opentelemetry;level=TIMESTAMPS;rate=7;count=3;opentelemetry,url=localhost:4318/v1/traces;opentelemetry,resource=service.name=a');
    expect(t.settings()).toMatchObject({ trace_mode: 'opentelemetry', trace_level: ['TIMESTAMPS'], trace_rate: '7', trace_count: '3' });
    expect(new Tracer(undefined, 'triton,file=/tmp/t.json;triton,log-frequency=5').settings()).toMatchObject({ trace_file: '/tmp/t.json', log_frequency: '5' });
    expect(() => new Tracer(undefined, 'colour=red')).toThrow(/unknown trace config 'colour'/);
    expect(() => new Tracer(undefined, 'opentelemetry,bsp_max_queue_size=0')).toThrow(/must be a positive integer/);
    expect(() => new Tracer(undefined, 'rate=0')).toThrow(/traceConfig: trace_rate must be an integer >= 1/);
    expect(() => new Tracer(undefined, 'level=TIMESTAMPS')).toThrow(/needs a trace file/);
  });

  it('starts no span unless opentelemetry mode samples the request', () => {
    const t = new Tracer(undefined);
    expect(t.start('m', '1', '', 1, performance.now(), undefined)).toBeUndefined();
    t.settings(undefined, { trace_mode: 'opentelemetry' });
    // Level OFF: not even a propagated context is traced.
    expect(t.start('m', '1', '', 1, performance.now(), { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' })).toBeUndefined();
  });
});
