/**
 * The sequences of an open loop on a sequence model. A request due by the schedule goes to the sequence that has
 * waited longest with nothing in flight, so each sequence has one request outstanding at a time and its requests
 * reach the server in order over any protocol and connection (perf_analyzer's `--serial-sequences`). When every
 * sequence is waiting on an answer, the request is held and goes out on the first sequence whose answer comes back.
 */
export class SequenceLanes {
  /** Lanes with nothing in flight, the longest idle first. */
  private readonly free: number[];
  private waiting = 0;
  /** Requests sent later than due because every sequence was busy, since the last `takeDelayed()`. */
  private delayedSoFar = 0;

  constructor(lanes: number) {
    this.free = Array.from({ length: lanes }, (_, lane) => lane);
  }

  /** A request is due: the lane to send it on, or undefined when it must wait for an answer. */
  due(): number | undefined {
    const lane = this.free.shift();
    if (lane === undefined) this.waiting++;
    return lane;
  }

  /** `lane`'s answer is in: true when a held request goes out on it now, false when it is free again. */
  answered(lane: number): boolean {
    if (this.waiting > 0) {
      this.waiting--;
      this.delayedSoFar++;
      return true;
    }
    this.free.push(lane);
    return false;
  }

  /** The requests sent later than due since the last call; counting starts again. */
  takeDelayed(): number {
    const n = this.delayedSoFar;
    this.delayedSoFar = 0;
    return n;
  }
}
