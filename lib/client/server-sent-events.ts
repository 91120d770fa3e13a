import { StringDecoder } from 'node:string_decoder';

/**
 * The `data` of each event in a Server-Sent Events body (several `data:` lines joined by `\n`), read as the
 * consumer pulls: the body is not read ahead, so an unread stream stays in the socket and a slow reader
 * slows the server down. Lines may end in `\n`, `\r\n` or `\r`; comments and other fields are skipped; an
 * event cut off by the end of the body is dropped, as the SSE specification says.
 */
export async function* serverSentEvents(body: AsyncIterable<Buffer | string>): AsyncGenerator<string, void, undefined> {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let data: string[] = [];
  for await (const chunk of body) {
    pending += typeof chunk === 'string' ? chunk : decoder.write(chunk);
    let start = 0;
    for (;;) {
      const lf = pending.indexOf('\n', start);
      const cr = pending.indexOf('\r', start);
      let end = lf < 0 ? cr : cr < 0 ? lf : Math.min(lf, cr);
      // A trailing '\r' may be the first half of '\r\n': wait for the next chunk.
      if (end < 0 || (end === cr && end === pending.length - 1)) break;
      const line = pending.slice(start, end);
      if (end === cr && pending[end + 1] === '\n') end++;
      start = end + 1;
      if (line === '') {
        if (data.length > 0) yield data.join('\n');
        data = [];
      } else if (line.startsWith('data:')) {
        data.push(line.slice(line[5] === ' ' ? 6 : 5));
      }
    }
    pending = pending.slice(start);
  }
}
