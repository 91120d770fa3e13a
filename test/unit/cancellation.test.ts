import { Cancellation } from '../../lib/base/cancellation';
import { TritonError } from '../../lib/base/errors';

describe('Cancellation', () => {
  it('calls each listener once on abort, not one that was removed, and at once when already aborted', () => {
    const c = new Cancellation();
    const calls: string[] = [];
    const a = () => calls.push('a');
    const b = () => calls.push('b');
    const removed = () => calls.push('removed');
    c.listen(a);
    c.listen(removed);
    c.listen(b);
    c.unlisten(removed);
    c.abort();
    c.abort();
    expect(calls).toEqual(['a', 'b']);
    c.listen(() => calls.push('late'));
    expect(calls).toEqual(['a', 'b', 'late']);
    expect(c.reason).toBeInstanceOf(TritonError);
    expect((c.reason as TritonError).code).toBe('CANCELLED');
  });

  it('links to another Cancellation, passing its TritonError reason on, until unlinked', () => {
    const parent = new Cancellation();
    const child = new Cancellation();
    const unlink = child.link(parent);
    const timeout = new TritonError('UNAVAILABLE', 'Request timeout expired');
    parent.abort(timeout);
    expect(child.aborted).toBe(true);
    expect(child.reason).toBe(timeout);

    const other = new Cancellation();
    const free = new Cancellation();
    free.link(other)();
    other.abort();
    expect(free.aborted).toBe(false);
    unlink();
  });

  it('links to an AbortSignal: its DOMException reason becomes CANCELLED; an aborted source aborts at once', () => {
    const controller = new AbortController();
    const c = new Cancellation();
    c.link(controller.signal);
    controller.abort();
    expect(c.aborted).toBe(true);
    expect((c.reason as TritonError).code).toBe('CANCELLED');

    const late = new Cancellation();
    late.link(AbortSignal.abort(new TritonError('DEADLINE_EXCEEDED', 'late')));
    expect((late.reason as TritonError).code).toBe('DEADLINE_EXCEEDED');

    const unlinked = new AbortController();
    const kept = new Cancellation();
    kept.link(unlinked.signal)();
    unlinked.abort();
    expect(kept.aborted).toBe(false);
  });

  it('makes its AbortSignal on first use, aborted with the same reason, before or after the abort', () => {
    const before = new Cancellation();
    const signal = before.signal;
    const reason = new TritonError('CANCELLED', 'gone');
    before.abort(reason);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
    const after = new Cancellation();
    after.abort(reason);
    expect(after.signal.aborted).toBe(true);
    expect(after.signal.reason).toBe(reason);
  });
});
