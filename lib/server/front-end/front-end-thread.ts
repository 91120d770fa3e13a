import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { TritonConfig, type TritonConfigInit } from '../../config/triton-config';
import { TritonError } from '../../base/errors';
import { createLogger } from '../../logging/logger';
import { GrpcServer } from '../grpc/grpc-server';
import { httpPortServer, openAiPortServer } from '../http-ports';
import type { ServerMetadata } from '../server-core';
import { PublishedState, type CoreState } from './core-state';
import { IdleCollection } from '../idle-collection';
import type { RingMemory } from './hand-off';
import type { FromFrontEnd, Phase, Ports, ToFrontEnd } from './messages';
import { RemoteCore } from './remote-core';
import { packError } from './packed-error';

/** What a front-end thread starts with. */
export interface FrontEndInit {
  /** The server's settings, as plain data. */
  readonly config: TritonConfigInit;
  /** The server's metadata (`GET /v2`), which does not change while it runs. */
  readonly metadata: ServerMetadata;
  /** Where the core publishes its state to this thread, the state as it was when the thread started, and the revision the core bumps after each (core-state.ts). */
  readonly statePort: MessagePort;
  readonly state: CoreState;
  readonly counters: SharedArrayBuffer;
  /** The rings of the hand-off (hand-off.ts): requests to the core thread, responses back. */
  readonly rings: { readonly toCore: RingMemory; readonly toFrontEnd: RingMemory };
}

/**
 * A front-end thread: the server's HTTP (with the OpenAI API), gRPC and OpenAI-port transports over a `RemoteCore`, listening
 * on the ports it is told to, beside the other front-end threads on the same ports. The core thread drives it
 * through the steps of a stop.
 */
function main(port: MessagePort, init: FrontEndInit): void {
  const config = new TritonConfig(init.config);
  const logger = createLogger(config.logLevel, config.logFormat);
  const published = new PublishedState(init.statePort, new Int32Array(init.counters), init.state);
  const core = new RemoteCore(config, published, init.metadata, port, logger, init.rings);
  const http = config.allowHttp ? httpPortServer(core, logger) : undefined;
  const grpc = config.allowGrpc ? new GrpcServer(core, logger) : undefined;
  const openai = config.openai && config.openaiPort >= 0 ? openAiPortServer(core, logger) : undefined;
  const post = (m: FromFrontEnd) => port.postMessage(m);
  // This thread's own heap, given back when it goes quiet after a burst, as the core thread does its own.
  const idleCollection = new IdleCollection(config.idleCollectionMegabytes * 1024 * 1024, () => core.inFlight);
  idleCollection.start();

  const listen = async (ports: Ports, reusePort: boolean): Promise<Ports> => ({
    http: http && ports.http !== undefined ? await http.listen(ports.http, config.httpAddress, reusePort) : undefined,
    grpc: grpc && ports.grpc !== undefined ? await grpc.listen(ports.grpc, reusePort) : undefined,
    openai: openai && ports.openai !== undefined ? await openai.listen(ports.openai, config.httpAddress, reusePort) : undefined,
  });

  const phase = async (step: Phase): Promise<void> => {
    if (step === 'drain') {
      http?.drain();
      openai?.drain();
      return;
    }
    if (step === 'stopAccepting') {
      await Promise.all([http?.stopAccepting(), openai?.stopAccepting(), grpc?.stopAccepting()]);
      return;
    }
    idleCollection.stop();
    await Promise.all([http?.forceClose(), openai?.forceClose(), grpc?.forceClose()]);
    core.failAll(new TritonError('UNAVAILABLE', 'Server stopped before the request finished'));
    core.sharedMemory.closeAll();
  };

  port.on('message', (message: ToFrontEnd) => {
    if (typeof message === 'number' || message.t === undefined) {
      core.results(message);
      return;
    }
    switch (message.t) {
      case 'called':
        core.called(message.id, message.value, message.error);
        return;
      case 'listen':
        listen(message.ports, message.reusePort).then(
          (ports) => post({ t: 'listening', ports }),
          (err: unknown) => post({ t: 'failed', error: packError(err) }),
        );
        return;
      case 'phase':
        phase(message.phase).then(
          () => post({ t: 'done', phase: message.phase }),
          (err: unknown) => {
            logger.error({ err, phase: message.phase }, 'front-end thread failed to stop in order');
            post({ t: 'done', phase: message.phase });
          },
        );
        return;
    }
  });
}

if (parentPort) main(parentPort, workerData as FrontEndInit);
