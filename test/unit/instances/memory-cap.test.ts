import test from 'ava';
import { goMemLimit, memoryDirectives, overCap, withMemoryLimit } from '../../../src/instances/memory-cap.js';

test('GOMEMLIMIT at 80% of the cap, unless the tunnel sets its own; none without a cap', (t) => {
  t.is(goMemLimit(0), undefined);
  t.is(goMemLimit(100), '80MiB');
  t.is(goMemLimit(1), '1MiB');
  t.deepEqual(withMemoryLimit({ A: '1' }, 64), { GOMEMLIMIT: '51MiB', A: '1' });
  t.deepEqual(withMemoryLimit({ GOMEMLIMIT: '20MiB' }, 64), { GOMEMLIMIT: '20MiB' });
  t.deepEqual(withMemoryLimit({ A: '1' }, 0), { A: '1' });
});

test('over the cap is strictly above it; a gone process or no cap is never over', (t) => {
  t.false(overCap(100 * 1048576, 100));
  t.true(overCap(100 * 1048576 + 1, 100));
  t.false(overCap(undefined, 100));
  t.false(overCap(1e12, 0));
  t.deepEqual(memoryDirectives(0), []);
  t.deepEqual(memoryDirectives(256), [
    ['MemoryHigh', '230M'],
    ['MemoryMax', '256M'],
  ]);
});
