import type { ChildProcess } from 'node:child_process';
import * as http from 'node:http';
import { join } from 'node:path';
import { track } from '../helpers/resources';
import { spawnServing } from '../helpers/serving-child';

const ROOT = join(__dirname, '../..');
const SERVER = ['--require', join(ROOT, 'lib/instances/worker/register-ts.js'), join(ROOT, 'test/fixtures/otel/server.ts')];

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  status?: { code?: number; message?: string };
  attributes: { key: string; value: Record<string, unknown> }[];
  events: { name: string }[];
}

/** An OTLP/HTTP receiver on a loopback port: keeps every span the server exports (the SDK's JSON encoding). */
class Receiver {
  readonly spans: (ExportedSpan & { service: string })[] = [];
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeSpans: { spans: ExportedSpan[] }[] }[];
      };
      for (const rs of body.resourceSpans) {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        for (const ss of rs.scopeSpans) for (const span of ss.spans) this.spans.push({ ...span, service });
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}/v1/traces`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const attr = (span: ExportedSpan, key: string) => {
  const v = span.attributes.find((a) => a.key === key)?.value;
  return v && Object.values(v)[0];
};

/** The fixture server in a child process, on free ports, exporting to `url`; resolves with its HTTP base URL. */
function startServer(url: string): Promise<{ child: ChildProcess; base: string; exited: Promise<number | null> }> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH };
  Object.assign(env, {
    TSTRITON_HTTP_PORT: '0',
    TSTRITON_HTTP_ADDRESS: '127.0.0.1',
    TSTRITON_ALLOW_GRPC: 'false',
    TSTRITON_ALLOW_METRICS: 'false',
    TSTRITON_TRACE_CONFIG: `mode=opentelemetry;level=TIMESTAMPS;rate=1;opentelemetry,url=${url};opentelemetry,resource=service.name=under-test`,
  });
  return spawnServing(SERVER, { cwd: ROOT, env }).then((s) => ({ ...s, base: `http://127.0.0.1:${s.ports.http}` }));
}

describe('OpenTelemetry tracing', () => {
  let receiver: Receiver;
  let server: Awaited<ReturnType<typeof startServer>> | undefined;

  // The receiver and the server's child process are tracked: if this hook times out (the child compiles its
  // TypeScript on start), both are still stopped after the test, the child first, and no later test sees them.
  beforeEach(async () => {
    server = undefined;
    receiver = track(new Receiver());
    server = await startServer(await receiver.listen());
  });

  // A test that has not stopped the server: SIGTERM lets it export what it holds before the receiver closes.
  afterEach(async () => {
    if (server && server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });

  /** Stops the server: it exports every span it still holds before it exits. */
  const stopServer = async () => {
    server!.child.kill('SIGTERM');
    expect(await server!.exited).toBe(0);
  };

  const infer = (model: string, headers: Record<string, string> = {}, id = '') =>
    fetch(`${server!.base}/v2/models/${model}/infer`, { method: 'POST', headers, body: JSON.stringify({ id, inputs: [{ name: 'x', datatype: 'FP32', shape: [2], data: [1, 2] }] }) });

  const traceSettings = (settings: Record<string, unknown>) => fetch(`${server!.base}/v2/trace/setting`, { method: 'POST', body: JSON.stringify(settings) });

  it("a worker instance's BLS call is a child span of its request, in the same trace, each with a compute span", async () => {
    expect((await infer('caller', {}, 'r1')).status).toBe(200);
    await stopServer();
    const caller = receiver.spans.find((s) => s.name === 'caller')!;
    const callee = receiver.spans.find((s) => s.name === 'double')!;
    expect(caller.service).toBe('under-test');
    expect(caller.parentSpanId ?? '').toBe('');
    expect(attr(caller, 'triton.request_id')).toBe('r1');
    expect(callee.traceId).toBe(caller.traceId);
    expect(callee.parentSpanId).toBe(caller.spanId);
    // SERVER for a client's request, INTERNAL for a model's call (OTLP's enum: 2 and 1).
    expect([caller.kind, callee.kind]).toEqual([2, 1]);
    for (const parent of [caller, callee]) {
      expect(receiver.spans.filter((s) => s.name === 'compute' && s.parentSpanId === parent.spanId)).toHaveLength(1);
    }
    expect(caller.status?.code).toBe(1);
  });

  it('a failed request ends its span with an error status and the failure reason', async () => {
    expect((await infer('broken')).status).toBe(500);
    await stopServer();
    const span = receiver.spans.find((s) => s.name === 'broken')!;
    expect(span.status).toMatchObject({ code: 2, message: expect.stringContaining('the model broke') });
    expect(attr(span, 'triton.failure_reason')).toBe('BACKEND');
    expect(span.events.map((e) => e.name)).toEqual(['REQUEST_START', 'QUEUE_START', 'REQUEST_END']);
  });

  it('samples one request in trace_rate, and always one that carries a traceparent', async () => {
    expect((await traceSettings({ trace_rate: '3' })).status).toBe(200);
    for (let i = 0; i < 6; i++) expect((await infer('double')).status).toBe(200);
    expect((await infer('double', { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' })).status).toBe(200);
    await stopServer();
    const spans = receiver.spans.filter((s) => s.name === 'double');
    expect(spans).toHaveLength(3);
    expect(spans.filter((s) => s.traceId === '4bf92f3577b34da6a3ce929d0e0e4736')).toHaveLength(1);
  });

  it('exports nothing once trace_level is OFF, even for a request with a traceparent', async () => {
    expect((await traceSettings({ trace_level: ['OFF'] })).status).toBe(200);
    expect((await infer('double', { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' })).status).toBe(200);
    await stopServer();
    expect(receiver.spans).toEqual([]);
  });
});
