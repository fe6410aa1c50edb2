import { Agent, request } from 'node:http';

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
}

export interface LoadOptions {
  url: string;
  method?: string;
  headers?: () => Record<string, string>;
  body?: string;
  connections: number;
  durationMs: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** One request on a keep-alive agent; resolves with its status. */
function once(agent: Agent, url: URL, options: LoadOptions): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        agent,
        method: options.method ?? 'GET',
        headers: { ...(options.headers?.() ?? {}), ...(options.body ? { 'Content-Type': 'application/json' } : {}) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A closed loop: `connections` clients each send a request as soon as the previous one answered. */
export async function load(options: LoadOptions): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections });
  const url = new URL(options.url);
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + options.durationMs;
  await Promise.all(
    Array.from({ length: options.connections }, async () => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        try {
          const status = await once(agent, url, options);
          if (status !== 200) errors++;
        } catch {
          errors++;
        }
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    seconds,
    rps: latencies.length / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}
