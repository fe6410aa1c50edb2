import type { Command } from './command.js';
import { change } from './edit-commands.js';
import { usageError } from './errors.js';
import { ID_FLAG, oneInstance } from './instance-refs.js';

/** `expire web 2h`, `expire web ssh 30m`, `expire web never`: the daemon reads the time (src/instances/expiry.ts). */
export const expire: Command = {
  usage: 'expire <name|#id> [PROXY] <DURATION|TIME|never>',
  summary:
    'stop an instance (and take it off boot), or disable one of its proxies, by itself: after a duration (30m, 2h, 7d, 1h30m), at an ISO 8601 time, or never (clears it); ls and proxies show what is set',
  flags: [ID_FLAG],
  async run(ctx) {
    const client = await ctx.client();
    const { target, rest } = await oneInstance(client, ctx.args);
    if (rest.length < 1 || rest.length > 2)
      throw usageError('expire takes an instance, optionally a proxy, and a duration, a time or never');
    const when = rest[rest.length - 1]!;
    const proxy = rest.length === 2 ? rest[0]! : undefined;
    const instanceID = String(target.id);
    return change(ctx, target, () =>
      proxy === undefined
        ? client.post('/tunnelAct/instanceMgr/modify', {
            instanceID,
            type: 'systemConfig',
            modifiedData: { expires: when },
          })
        : client.post('/tunnelAct/proxyMgr/setExpiry', { instanceID, proxyName: proxy, expires: when }),
    );
  },
};
