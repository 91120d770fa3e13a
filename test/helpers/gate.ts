import type { Request, Response } from 'tstriton';

/**
 * A callable that holds every request until `open()`, and echoes INPUT0 as OUTPUT0 then; `started` resolves
 * with the first request it sees, `aborted` with the reason its signal fires with.
 */
export class Gate {
  readonly started: Promise<Request>;
  readonly aborted: Promise<unknown>;
  private onStart!: (r: Request) => void;
  private onAbort!: (reason: unknown) => void;
  private opened = false;
  private waiters: (() => void)[] = [];

  constructor() {
    this.started = new Promise((r) => (this.onStart = r));
    this.aborted = new Promise((r) => (this.onAbort = r));
  }

  open(): void {
    this.opened = true;
    for (const w of this.waiters.splice(0)) w();
  }

  readonly callable = async (requests: Request[]): Promise<Response[]> => {
    const req = requests[0] as Request;
    req.signal.addEventListener('abort', () => this.onAbort(req.signal.reason), { once: true });
    this.onStart(req);
    if (!this.opened) await new Promise<void>((resolve) => this.waiters.push(resolve));
    return requests.map((r) => ({ OUTPUT0: r.inputs.INPUT0 as Response[string] }));
  };
}
