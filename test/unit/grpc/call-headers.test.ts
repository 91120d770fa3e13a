import { GrpcStatus } from '../../../lib/base/errors';
import { parseCallHeaders, type CallHeaders } from '../../../lib/server/grpc/call-headers';

const parsed = (headers: Record<string, string | string[]>): CallHeaders => {
  const h = parseCallHeaders(headers);
  if ('code' in h) throw new Error(`expected headers, got status ${h.code}: ${h.details}`);
  return h;
};

describe('parseCallHeaders', () => {
  it('keeps custom metadata and leaves out pseudo-headers and the transport headers grpc-js hides from handlers', () => {
    const { metadata } = parsed({
      ':path': '/a.B/C',
      ':authority': 'h',
      'content-type': 'application/grpc',
      te: 'trailers',
      'grpc-timeout': '1S',
      'grpc-encoding': 'gzip',
      'grpc-accept-encoding': 'gzip',
      'accept-encoding': 'gzip',
      'user-agent': 'grpc-python/1.0',
      'x-tag': 'abc',
    });
    expect(metadata.getMap()).toEqual({ 'user-agent': 'grpc-python/1.0', 'x-tag': 'abc' });
    expect(metadata.get('X-Tag')).toEqual(['abc']);
    expect(metadata.get('te')).toEqual([]);
  });

  it('decodes -bin values from base64, each of a repeated header joined with commas', () => {
    const { metadata } = parsed({ 'trace-bin': `${Buffer.from([0, 1, 255]).toString('base64')}, ${Buffer.from('hi').toString('base64')}` });
    expect(metadata.get('trace-bin')).toEqual([Buffer.from([0, 1, 255]), Buffer.from('hi')]);
    expect(metadata.getMap()).toEqual({ 'trace-bin': Buffer.from([0, 1, 255]) });
  });

  it('leaves out an entry gRPC does not allow: a key with other characters, a text value that is not printable ASCII', () => {
    const { metadata } = parsed({ 'x~y': 'v', 'x-text': 'caf\u00e9', 'x-ok': 'fine' });
    expect(metadata.getMap()).toEqual({ 'x-ok': 'fine' });
  });

  it.each([
    ['2H', 7_200_000],
    ['3M', 180_000],
    ['1500m', 1500],
    ['2S', 2000],
    ['5000000u', 5000],
    ['99999999n', 99],
  ])('reads grpc-timeout %s as a deadline %i ms away', (timeout, ms) => {
    const before = Date.now();
    const { deadline } = parsed({ 'grpc-timeout': timeout });
    expect(deadline).toBeGreaterThanOrEqual(before + ms);
    expect(deadline).toBeLessThanOrEqual(Date.now() + ms);
  });

  it('has no deadline without grpc-timeout, and identity without grpc-encoding', () => {
    expect(parsed({})).toMatchObject({ deadline: Infinity, encoding: 'identity' });
    expect(parsed({ 'grpc-encoding': 'deflate' }).encoding).toBe('deflate');
  });

  it('answers a grpc-timeout that is not one with the status grpc-js answers it with', () => {
    expect(parseCallHeaders({ 'grpc-timeout': 'soon' })).toEqual({ code: GrpcStatus.INTERNAL, details: 'Invalid grpc-timeout value "soon"' });
  });
});
