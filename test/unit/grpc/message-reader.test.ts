import { deflateSync, gzipSync } from 'node:zlib';
import { GrpcStatus } from '../../../lib/base/errors';
import type { GrpcCallStatus } from '../../../lib/server/grpc/grpc-status';
import { MessageReader, type MessageReaderOptions } from '../../../lib/server/grpc/message-reader';

/** A gRPC length-prefixed message. */
function frame(body: Buffer | string, compressed = false): Buffer {
  const bytes = Buffer.from(body);
  const prefix = Buffer.alloc(5);
  prefix[0] = compressed ? 1 : 0;
  prefix.writeUInt32BE(bytes.length, 1);
  return Buffer.concat([prefix, bytes]);
}

/** A reader whose reports are recorded in order, as text: `msg:<body>`, `end`, `error:<code> <details>`. */
function reader(options: Partial<MessageReaderOptions> = {}, allocate?: (n: number) => Buffer | undefined) {
  const events: string[] = [];
  let settle!: () => void;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  const r = new MessageReader(
    { path: '/a.B/C', maxReceive: -1, encoding: 'identity', single: false, ...options },
    {
      ...(allocate ? { allocate } : {}),
      onMessage: (bytes, own) => events.push(`msg:${bytes.toString()}${own ? '' : ' (inflated)'}`),
      onHalfClose: () => {
        events.push('end');
        settle();
      },
      onReadError: (s: GrpcCallStatus) => {
        events.push(`error:${s.code} ${s.details}`);
        settle();
      },
    },
  );
  return { r, events, settled };
}

describe('MessageReader', () => {
  it('reads messages split across chunks at any byte, and several in one chunk', () => {
    const { r, events } = reader();
    const wire = Buffer.concat([frame('first'), frame(''), frame('third message')]);
    for (let i = 0; i < wire.length; i += 3) r.write(wire.subarray(i, i + 3));
    r.write(Buffer.concat([frame('a'), frame('b')]));
    r.end();
    expect(events).toEqual(['msg:first', 'msg:', 'msg:third message', 'msg:a', 'msg:b', 'end']);
  });

  it('receives an uncompressed message into the buffer its sink gives, its prefix in front', () => {
    const given = Buffer.alloc(5 + 5);
    const seen: Buffer[] = [];
    const r = new MessageReader(
      { path: '/a.B/C', maxReceive: -1, encoding: 'identity', single: false },
      { allocate: (n) => (n === 10 ? given : undefined), onMessage: (b) => seen.push(b), onHalfClose: () => undefined, onReadError: () => undefined },
    );
    r.write(frame('hello'));
    expect(seen[0]?.buffer).toBe(given.buffer);
    expect(seen[0]?.byteOffset).toBe(given.byteOffset + 5);
    expect(given.subarray(0, 5)).toEqual(frame('hello').subarray(0, 5));
  });

  it('reports compressed and plain messages and the half-close in the order they came, however long inflating takes', async () => {
    const { r, events, settled } = reader({ encoding: 'gzip' });
    r.write(Buffer.concat([frame(gzipSync(Buffer.alloc(4 << 20, 'z')), true), frame('plain'), frame(gzipSync('small'), true), frame('last')]));
    r.end();
    await settled;
    expect(events).toEqual([`msg:${'z'.repeat(4 << 20)} (inflated)`, 'msg:plain', 'msg:small (inflated)', 'msg:last', 'end']);
  });

  it('inflates deflate (zlib) messages', async () => {
    const { r, events, settled } = reader({ encoding: 'deflate' });
    r.write(frame(deflateSync('deflated'), true));
    r.end();
    await settled;
    expect(events).toEqual(['msg:deflated (inflated)', 'end']);
  });

  it.each<[string, Partial<MessageReaderOptions>, Buffer, string]>([
    ['a message over the limit', { maxReceive: 4 }, frame('12345'), `${GrpcStatus.RESOURCE_EXHAUSTED} Received message larger than max (5 vs 4)`],
    ['a message that inflates past the limit', { maxReceive: 1000, encoding: 'gzip' }, frame(gzipSync(Buffer.alloc(1001)), true), `${GrpcStatus.RESOURCE_EXHAUSTED} Received message that decompresses to a size larger than 1000`],
    ['a compressed flag with no encoding', {}, frame('x', true), `${GrpcStatus.INTERNAL} Received a compressed message but "grpc-encoding" is identity`],
    ['bytes that are not gzip', { encoding: 'gzip' }, frame('not gzip', true), `${GrpcStatus.INTERNAL} Failed to decompress message`],
    ['an encoding it does not speak', { encoding: 'br' }, frame('x', true), `${GrpcStatus.UNIMPLEMENTED} Received message compressed with unsupported encoding "br"`],
    ['a second message of a unary call', { single: true }, Buffer.concat([frame('one'), frame('two')]), `${GrpcStatus.UNIMPLEMENTED} Received a second request message for server streaming method /a.B/C`],
  ])('ends the call for %s with its status, and reports nothing after it', async (_what, options, wire, error) => {
    const { r, events, settled } = reader(options);
    r.write(wire);
    r.write(frame('after'));
    r.end();
    await settled;
    expect(events.filter((e) => e.startsWith('error'))).toEqual([`error:${error}`]);
    expect(events.at(-1)).toBe(`error:${error}`);
    expect(events).not.toContain('msg:after');
  });

  it('knows a message cut short at the half-close', () => {
    const { r } = reader();
    r.write(frame('cut').subarray(0, 6));
    expect(r.midMessage).toBe(true);
    r.write(frame('cut').subarray(6));
    expect(r.midMessage).toBe(false);
  });
});
