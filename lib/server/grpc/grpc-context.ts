import { TritonError, serverStopping } from '../../base/errors';
import type { ServerCore } from '../server-core';
import type { CallTracker } from './call-tracker';

/** What every gRPC handler needs: the server core and the calls in progress. */
export interface GrpcContext {
  readonly core: ServerCore;
  readonly tracker: CallTracker;
  /** Which metadata keys become request parameters (`grpcHeaderForwardPattern`). */
  readonly forwardHeader?: (name: string) => boolean;
}

/** The error new calls get once the server stops accepting them. */
export function stoppingError(): TritonError {
  return serverStopping();
}
