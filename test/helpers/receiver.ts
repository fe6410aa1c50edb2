import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: any;
}

/** A real local HTTP server that records what it receives and answers as `respond` decides. */
export async function startReceiver(
  respond: (req: Received, res: ServerResponse, index: number) => void = (_r, res) => res.end('ok'),
) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      const entry = {
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: text ? JSON.parse(text) : undefined,
      };
      received.push(entry);
      respond(entry, res, received.length - 1);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hook/s3cr3t-path`,
    received,
    async waitFor(predicate: (r: Received[]) => boolean, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(received)) {
        if (Date.now() > deadline)
          throw new Error(`receiver condition not met: ${JSON.stringify(received.map((r) => r.body?.event))}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return received;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}
