/**
 * Work in flight, counted: `add` when it starts, `done` when it ends, and `idle(timeoutMs)` resolves true once
 * nothing is left (false when the time ran out first). The server, its HTTP endpoint and each model count
 * their requests with one of these, so that a stop or an unload can wait for them.
 */
export class InFlight {
  private count = 0;
  private added = 0;
  private waiters: (() => void)[] = [];

  /** How much is in flight. */
  get size(): number {
    return this.count;
  }

  /** How much was ever added: what ended is `total - size`. */
  get total(): number {
    return this.added;
  }

  add(): void {
    this.count++;
    this.added++;
  }

  done(): void {
    if (--this.count === 0 && this.waiters.length > 0) for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves true once nothing is in flight, or false after `timeoutMs`. */
  idle(timeoutMs: number): Promise<boolean> {
    if (this.count === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }
}
