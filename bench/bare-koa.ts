// A bare Koa route in a plain Node process: the yardstick for the daemon's control-plane throughput.
import { createServer } from 'node:http';
import Koa from 'koa';

const app = new Koa();
const payload = {
  success: true,
  message: 'ok',
  data: Array.from({ length: 100 }, (_, i) => ({ instanceID: i + 1, name: `bench_${i}`, isRunning: false })),
};
app.use(async (ctx) => {
  ctx.body = payload;
});
const server = createServer(app.callback());
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(`listening on http://127.0.0.1:${port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
