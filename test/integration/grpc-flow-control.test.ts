import * as http2 from 'node:http2';
import { Triton } from '../../lib';
import { loopbackTriton } from '../helpers/loopback-triton';

/** Connects to the gRPC port as an HTTP/2 client and reads what the server announced: its settings and its connection window. */
async function announced(port: number): Promise<{ streamWindow: number | undefined; connectionWindow: number | undefined }> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    await new Promise<void>((resolve, reject) => {
      session.once('remoteSettings', () => resolve());
      session.once('error', reject);
    });
    // The connection's WINDOW_UPDATE follows the SETTINGS frame; a ping's answer comes after both.
    await new Promise<void>((resolve, reject) => session.ping((err) => (err ? reject(err) : resolve())));
    return { streamWindow: session.remoteSettings.initialWindowSize, connectionWindow: session.state.remoteWindowSize };
  } finally {
    session.destroy();
  }
}

describe('gRPC HTTP/2 flow-control windows', () => {
  const serve = async (config: { grpcFlowControlWindow?: number }) => {
    const triton = loopbackTriton({ allowGrpc: true, allowHttp: false, ...config });
    await triton.run();
    return triton;
  };

  it('announces an 8 MiB window per call and 32 MiB for the connection by default', async () => {
    const triton = await serve({});
    try {
      expect(await announced(triton.ports.grpc!)).toEqual({ streamWindow: 8 * 1024 * 1024, connectionWindow: 32 * 1024 * 1024 });
    } finally {
      await triton.stop();
    }
  });

  it('takes the window from grpcFlowControlWindow, keeping the connection window within HTTP/2 bounds', async () => {
    for (const [window, connection] of [
      [65_535, 4 * 65_535],
      [1024 * 1024 * 1024, 2 ** 31 - 1],
    ]) {
      const triton = await serve({ grpcFlowControlWindow: window });
      try {
        expect(await announced(triton.ports.grpc!)).toEqual({ streamWindow: window, connectionWindow: connection });
      } finally {
        await triton.stop();
      }
    }
  });

  it('refuses a window HTTP/2 cannot announce', () => {
    for (const bad of [1000, 2 ** 31]) expect(() => new Triton({ grpcFlowControlWindow: bad })).toThrow(/grpcFlowControlWindow/);
  });
});
