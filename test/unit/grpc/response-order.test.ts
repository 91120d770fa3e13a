import { ResponseOrder, type Place } from '../../../lib/server/grpc/response-order';

/** An order over a stream that records what it writes; `full` makes the next writes answer with a drain promise. */
function recording(): { order: ResponseOrder<string>; sent: string[]; drain(): void; full: { on: boolean } } {
  const sent: string[] = [];
  const full = { on: false };
  const drains: (() => void)[] = [];
  const order = new ResponseOrder<string>((m) => {
    sent.push(m);
    return full.on ? new Promise<void>((r) => drains.push(r)) : undefined;
  });
  const drain = () => {
    for (const d of drains.splice(0)) d();
  };
  return { order, sent, drain, full };
}

/** Whether `p` has settled, checked after the microtasks queued so far have run. */
async function settled(p: Promise<void> | undefined): Promise<boolean> {
  if (p === undefined) return true;
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('ResponseOrder', () => {
  it('writes answers in the order their places were taken, whatever order they come in', async () => {
    const { order, sent } = recording();
    const [a, b, c] = [order.enter(), order.enter(), order.enter()] as [Place, Place, Place];
    const cWritten = order.write(c, 'c');
    const bWritten = order.write(b, 'b');
    expect(sent).toEqual([]);
    expect(await settled(cWritten)).toBe(false);
    expect(order.write(a, 'a')).toBeUndefined();
    expect(sent).toEqual(['a', 'b', 'c']);
    expect(await settled(bWritten)).toBe(true);
    expect(await settled(cWritten)).toBe(true);
  });

  it('writes at once for the first place, and for every place once those before it are answered', () => {
    const { order, sent } = recording();
    const a = order.enter();
    order.write(a, 'a');
    const b = order.enter();
    order.write(b, 'b');
    expect(sent).toEqual(['a', 'b']);
  });

  it('lets a place that leaves (a decoupled request) write as it goes, and stops the places behind it waiting for it', () => {
    const { order, sent } = recording();
    const [slow, decoupled, fast] = [order.enter(), order.enter(), order.enter()] as [Place, Place, Place];
    order.write(fast, 'fast');
    order.leave(decoupled);
    order.write(decoupled, 'd1');
    expect(sent).toEqual(['d1']);
    order.write(slow, 'slow');
    expect(sent).toEqual(['d1', 'slow', 'fast']);
    order.write(decoupled, 'd2');
    expect(sent).toEqual(['d1', 'slow', 'fast', 'd2']);
  });

  it('writes the answers behind a first place when it leaves', () => {
    const { order, sent } = recording();
    const [decoupled, b] = [order.enter(), order.enter()] as [Place, Place];
    order.write(b, 'b');
    expect(sent).toEqual([]);
    order.leave(decoupled);
    expect(sent).toEqual(['b']);
  });

  it('lets a place that ends without writing (no outputs) release the places behind it', () => {
    const { order, sent } = recording();
    const [a, b] = [order.enter(), order.enter()] as [Place, Place];
    order.write(b, 'b');
    order.done(a);
    expect(sent).toEqual(['b']);
    order.done(b);
    expect(sent).toEqual(['b']);
  });

  it("settles a held answer's writer only once the stream has taken it: after 'drain' when the write buffer is full", async () => {
    const { order, sent, drain, full } = recording();
    const [a, b] = [order.enter(), order.enter()] as [Place, Place];
    const bWritten = order.write(b, 'b');
    full.on = true;
    const aWritten = order.write(a, 'a');
    expect(sent).toEqual(['a', 'b']);
    expect(await settled(aWritten)).toBe(false);
    expect(await settled(bWritten)).toBe(false);
    drain();
    expect(await settled(aWritten)).toBe(true);
    expect(await settled(bWritten)).toBe(true);
  });

  it('drops what it holds and settles the writers when cleared (a cancelled stream), then writes straight through', async () => {
    const { order, sent } = recording();
    const [a, b, c] = [order.enter(), order.enter(), order.enter()] as [Place, Place, Place];
    const bWritten = order.write(b, 'b');
    const cWritten = order.write(c, 'c');
    order.clear();
    expect(await settled(bWritten)).toBe(true);
    expect(await settled(cWritten)).toBe(true);
    expect(sent).toEqual([]);
    // The stream's own write drops what comes after it closed; the order no longer holds anything back.
    order.write(a, 'a');
    order.write(order.enter(), 'd');
    expect(sent).toEqual(['a', 'd']);
  });
});
