import type { Operation } from '../operation.js';
import { operations as accounts } from './accounts.js';
import { operations as apiKeys } from './api-keys.js';
import { operations as apply } from './apply.js';
import { operations as instances } from './instances.js';
import { operations as metrics } from './metrics.js';
import { operations as document } from './openapi.js';
import { operations as proxies } from './proxies.js';
import { operations as sessions } from './sessions.js';
import { operations as settings } from './settings.js';
import { operations as system } from './system.js';
import { operations as users } from './users.js';

/** Every operation a route declares, for the document (read when asked: route modules and the document import each other). */
export const declaredOperations = (): Operation[] => [
  ...system,
  ...metrics,
  ...document,
  ...accounts,
  ...users,
  ...sessions,
  ...apiKeys,
  ...settings,
  ...instances,
  ...apply,
  ...proxies,
];
