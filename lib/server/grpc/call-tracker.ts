import type { TritonError } from '../../base/errors';

/** A call in progress that a forced close may have to end. */
export interface TrackedCall {
  /** Ends the call now with `err` and aborts its model work. */
  fail(err: TritonError): void;
}

/**
 * The gRPC calls in progress, and whether the server still takes new ones. Graceful stop flips
 * `accepting`; a forced close fails whatever is left.
 */
export class CallTracker {
  private readonly calls = new Set<TrackedCall>();
  private open = true;

  /** False once the server stops accepting calls. */
  get accepting(): boolean {
    return this.open;
  }

  /** Calls in progress. */
  get size(): number {
    return this.calls.size;
  }

  /** Refuses new calls from now on. */
  stopAccepting(): void {
    this.open = false;
  }

  add(call: TrackedCall): void {
    this.calls.add(call);
  }

  delete(call: TrackedCall): void {
    this.calls.delete(call);
  }

  /** Fails every call still in progress. */
  failAll(err: TritonError): void {
    for (const call of [...this.calls]) call.fail(err);
    this.calls.clear();
  }
}
