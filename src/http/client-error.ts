import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { rawFailure } from './envelope.js';

/** The status Node itself gives each parser error it answers; any other one is a malformed request. */
const ANSWERS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'request headers are too large'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'request chunk extensions are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request was not received in time'],
};

/** How long a peer that is still sending after its answer may keep the socket. */
const LINGER_MS = 1000;

const answered = new WeakSet<Duplex>();

/** Writes the answer and closes; a peer still sending gets a moment so the answer is not lost to a reset. */
function answer(socket: Duplex, status: number, message: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(rawFailure(status, message));
  const linger = setTimeout(() => socket.destroy(), LINGER_MS);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
}

/**
 * The http.Server 'clientError' handler: a request Node's parser refused is answered in the response envelope
 * and the connection closed. Nothing is written while a response is being written on the socket, or when it
 * cannot be written to.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // The parser keeps reporting on a socket that is still sending after its answer: it is ending already.
  if (answered.has(socket)) return;
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  answered.add(socket);
  const [status, message] = ANSWERS[err.code ?? ''] ?? [400, 'malformed HTTP request'];
  // The response to an earlier request on this connection, if one is still being made (Node's own reference).
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (!inFlight || inFlight.writableFinished) {
    answer(socket, status, message);
    return;
  }
  // Answers go out in request order: this one follows the response in flight, or none goes if that one fails.
  inFlight.once('close', () => (inFlight.writableFinished ? answer(socket, status, message) : socket.destroy()));
}
