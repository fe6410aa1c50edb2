import type { Operation } from '../operation.js';
import { operations as accounts } from './accounts.js';
import { operations as apiKeys } from './api-keys.js';
import { operations as sessions } from './sessions.js';
import { operations as system } from './system.js';
import { operations as users } from './users.js';

/** Every operation a route declares, for the document. */
export const DECLARED_OPERATIONS: Operation[] = [...system, ...accounts, ...users, ...sessions, ...apiKeys];
