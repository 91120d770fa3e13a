import type * as http from 'node:http';
import { SERVER_STOPPING_MESSAGE, type TritonError } from '../../base/errors';
import { closeAfterRefusal } from './connection-drain';

/** Writes Triton's error body `{"error": "..."}` with the status from the error table. */
export function sendError(res: http.ServerResponse, err: TritonError): void {
  if (res.headersSent) {
    // A response under way cannot change its status: cut it, so that the client sees it incomplete. One
    // already complete stays as it is.
    if (!res.writableEnded) res.destroy(err);
    return;
  }
  // Refused because the server is stopping: the connection closes too, like every refusal of a stopping server,
  // also for a request that reached the core only after the stop began (from a front-end thread, or while its body
  // was read), whose exchange began before the drain.
  if (err.code === 'UNAVAILABLE' && err.message === SERVER_STOPPING_MESSAGE) closeAfterRefusal(res);
  const body = JSON.stringify({ error: err.message });
  const headers: http.OutgoingHttpHeaders = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) };
  if (err.code === 'UNSUPPORTED' && /compression/i.test(err.message)) headers['Accept-Encoding'] = 'gzip, deflate';
  res.writeHead(err.httpStatus, headers);
  res.end(body);
}
