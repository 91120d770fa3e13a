/** One event of a request's response stream: a response, the end of the stream, or both. */
export interface StreamEvent<T> {
  /** The response, absent for an empty final event. */
  readonly value?: T;
  /** No more responses follow. */
  readonly final: boolean;
}

/**
 * The responses of one decoupled request, as an async iterable with a bounded buffer. The producer's `push`
 * waits while `highWaterMark` events are unread, so a slow reader slows its producer instead of growing
 * memory. When the reader stops early (`return()`), later pushes are dropped and `onClose` fires.
 */
export class ResponseStream<T> implements AsyncIterable<StreamEvent<T>> {
  private readonly buffer: StreamEvent<T>[] = [];
  private error: unknown;
  private done = false;
  private closedByReader = false;
  private waitingReader: (() => void) | undefined;
  private waitingWriters: (() => void)[] = [];

  constructor(
    private readonly highWaterMark = 16,
    private readonly onClose?: () => void,
  ) {}

  /** Events buffered and unread (for tests and metrics). */
  get buffered(): number {
    return this.buffer.length;
  }

  /** True once the stream ended, failed, or its reader stopped. */
  get closed(): boolean {
    return this.done || this.closedByReader;
  }

  /** Adds a response; resolves when there is room for more. A final push ends the stream. */
  async push(value: T, final = false): Promise<void> {
    if (this.closed) return;
    this.buffer.push({ value, final });
    if (final) this.done = true;
    this.wakeReader();
    while (this.buffer.length >= this.highWaterMark && !this.closedByReader) {
      await new Promise<void>((resolve) => this.waitingWriters.push(resolve));
    }
  }

  /** Ends the stream with an empty final event. */
  end(): void {
    if (this.closed) return;
    this.buffer.push({ final: true });
    this.done = true;
    this.wakeReader();
  }

  /** Ends the stream with an error, delivered after the buffered events. */
  fail(err: unknown): void {
    if (this.closed) return;
    this.error = err;
    this.done = true;
    this.wakeReader();
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamEvent<T>> {
    return {
      next: async () => {
        for (;;) {
          const event = this.buffer.shift();
          if (event) {
            this.wakeWriters();
            return { value: event, done: false };
          }
          if (this.error !== undefined) {
            const err = this.error;
            this.error = undefined;
            throw err;
          }
          if (this.done || this.closedByReader) return { value: undefined, done: true };
          await new Promise<void>((resolve) => (this.waitingReader = resolve));
        }
      },
      return: async () => {
        this.stopReading();
        return { value: undefined, done: true };
      },
    };
  }

  /** The reader is gone: drop what is buffered, release the producer, and tell the owner. */
  stopReading(): void {
    if (this.closedByReader) return;
    const wasDone = this.done;
    this.closedByReader = true;
    this.buffer.length = 0;
    this.wakeWriters();
    if (!wasDone) this.onClose?.();
  }

  private wakeReader(): void {
    const r = this.waitingReader;
    this.waitingReader = undefined;
    r?.();
  }

  private wakeWriters(): void {
    if (this.buffer.length >= this.highWaterMark && !this.closedByReader) return;
    const writers = this.waitingWriters;
    this.waitingWriters = [];
    for (const w of writers) w();
  }
}
