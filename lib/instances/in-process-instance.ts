import { TritonError } from '../errors';
import type { InferCallable, Request, Response } from '../callable';
import type { Device, Instance, InstanceContext } from './instance';

/** Runs the callable on the main thread: right for I/O-bound or already asynchronous code. */
export class InProcessInstance implements Instance {
  readonly healthy = true;

  constructor(
    readonly name: string,
    readonly device: Device,
    private readonly callable: InferCallable,
  ) {}

  async start(_context: InstanceContext): Promise<void> {}

  async execute(requests: Request[]): Promise<Response[]> {
    const responses = await this.callable(requests);
    if (!Array.isArray(responses) || responses.length !== requests.length) {
      const got = Array.isArray(responses) ? `${responses.length} responses` : typeof responses;
      throw new TritonError('INFERENCE_FAILED', `instance ${this.name}: the callable must return one response per request (${requests.length}), got ${got}`);
    }
    return responses;
  }

  async close(): Promise<void> {}
}
