import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  ERROR_CODES,
  GrpcStatus,
  MESSAGES,
  messageText,
  tritonError,
  REQUEST_CANCELLED_MESSAGE,
  SERVER_STOPPING_MESSAGE,
  TritonError,
  UnrecoverableError,
  failureReason,
  invalidArgument,
  requestCancelled,
  serverStopping,
  toTritonError,
  type ErrorCode,
  type FailureReason,
} from '../../../lib/base/errors';
import { VERSION } from '../../../lib/base/version';

const grpcName = (code: number) => Object.entries(GrpcStatus).find(([, v]) => v === code)?.[0];

describe('error table', () => {
  const doc = fs.readFileSync(path.join(__dirname, '../../../docs/errors.md'), 'utf8');

  it.each(Object.entries(ERROR_CODES))('docs/errors.md lists %s with its statuses', (code, kind) => {
    const line = doc.split('\n').find((l) => l.startsWith(`| \`${code}\` |`));
    expect(line).toBeDefined();
    const cells = (line as string).split('|').map((c) => c.trim());
    expect(cells[2]).toBe(String(kind.http));
    expect(cells[3]).toBe(grpcName(kind.grpc));
  });

  it('docs/errors.md lists no code the table lacks', () => {
    const documented = [...doc.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(Object.keys(ERROR_CODES).sort());
  });

  it.each(Object.entries(MESSAGES))('docs/errors.md lists the message %s with its code and text', (key, m) => {
    const line = doc.split('\n').find((l) => l.startsWith(`| \`${key}\` |`));
    expect(line).toBeDefined();
    expect(line).toBe(`| \`${key}\` | \`${m.code}\` | ${m.text} |`);
  });

  it('docs/errors.md lists no message the table lacks', () => {
    const documented = [...doc.matchAll(/^\| `([a-z][A-Za-z]+)` \| `[A-Z_]+` \|/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(Object.keys(MESSAGES).sort());
  });

  it('puts the values into a message, and raises it with its code', () => {
    expect(messageText('unknownVersion', { model: 'm', version: 2 })).toBe("Request for unknown model: 'm' version 2 is not found");
    const e = tritonError('deadlineExceeded', { id: 'r1', ms: 250 });
    expect([e.code, e.message, e.httpStatus]).toEqual(['DEADLINE_EXCEEDED', '[request id: r1] Request timeout expired after 250 ms', 400]);
    expect([tritonError('methodNotAllowed').code, tritonError('methodNotAllowed').httpStatus]).toEqual(['METHOD_NOT_ALLOWED', 405]);
  });

  it("maps unknown models to 400 / INVALID_ARGUMENT, as Triton does", () => {
    const e = new TritonError('MODEL_NOT_FOUND', 'x');
    expect([e.httpStatus, e.grpcStatus]).toEqual([400, GrpcStatus.INVALID_ARGUMENT]);
  });

  it('maps a known model with no ready version to 404 / NOT_FOUND, and a version not ready to 503 / UNAVAILABLE, as Triton does', () => {
    const none = tritonError('noReadyVersion', { model: 'm' });
    expect([none.httpStatus, none.grpcStatus, none.message]).toEqual([404, GrpcStatus.NOT_FOUND, "Request for unknown model: 'm' has no available versions"]);
    const loading = tritonError('versionUnavailable', { model: 'm', version: 2 });
    expect([loading.httpStatus, loading.grpcStatus, loading.message]).toEqual([503, GrpcStatus.UNAVAILABLE, "Request for unknown model: 'm' version 2 is not at ready state"]);
  });

  it('wraps foreign errors, keeping UnrecoverableError recognisable', () => {
    expect(toTritonError(new Error('x'), 'INFERENCE_FAILED').code).toBe('INFERENCE_FAILED');
    expect(toTritonError(new UnrecoverableError('gpu lost')).code).toBe('UNRECOVERABLE');
    const same = new TritonError('NOT_FOUND', 'n');
    expect(toTritonError(same)).toBe(same);
  });
});

describe('shared errors', () => {
  it('builds INVALID_ARGUMENT errors with the message given', () => {
    const e = invalidArgument('input "x": expected FP32, got INT32');
    expect([e.code, e.message]).toEqual(['INVALID_ARGUMENT', 'input "x": expected FP32, got INT32']);
  });

  it('keeps the messages clients match on', () => {
    expect([serverStopping().code, serverStopping().message]).toEqual(['UNAVAILABLE', 'Server is stopping and accepts no new requests']);
    expect(SERVER_STOPPING_MESSAGE).toBe('Server is stopping and accepts no new requests');
    expect([requestCancelled().code, requestCancelled().message]).toEqual(['CANCELLED', 'request cancelled']);
    expect(REQUEST_CANCELLED_MESSAGE).toBe('request cancelled');
  });

  it.each<[ErrorCode, FailureReason]>([
    ['CANCELLED', 'CANCELED'],
    ['UNAVAILABLE', 'REJECTED'],
    ['INFERENCE_FAILED', 'BACKEND'],
    ['UNRECOVERABLE', 'BACKEND'],
    ['INTERNAL', 'BACKEND'],
    ['INVALID_ARGUMENT', 'OTHER'],
    ['DEADLINE_EXCEEDED', 'OTHER'],
    ['MODEL_NOT_READY', 'OTHER'],
  ])('counts a %s failure as %s', (code, reason) => {
    expect(failureReason(new TritonError(code, 'x'))).toBe(reason);
  });

  it('counts anything but a TritonError as OTHER', () => {
    expect(failureReason(new Error('x'))).toBe('OTHER');
    expect(failureReason('x')).toBe('OTHER');
  });
});

describe('version', () => {
  it('equals package.json', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '../../../package.json'), 'utf8')) as { version: string };
    expect(VERSION).toBe(pkg.version);
  });
});
