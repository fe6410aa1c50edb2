import test from 'ava';
import { globPattern, resolveIn, type Listed } from '../../../src/client/instance-refs.js';

test('patterns match whole names: * any run, ? one character, [..] a set; labels narrow', (t) => {
  t.true(globPattern('web-*').test('web-1'));
  t.false(globPattern('web-*').test('xweb-1'));
  t.true(globPattern('db-?').test('db-1'));
  t.false(globPattern('db-?').test('db-12'));
  t.true(globPattern('web-[12]').test('web-2'));
  t.false(globPattern('web-[!12]').test('web-2'));
  t.true(globPattern('a.b*').test('a.bc'));
  t.false(globPattern('a.b*').test('axbc'), 'a dot is a dot');
  const item = (instanceID: number, name: string, labels: Record<string, string>) =>
    ({ instanceID, name, state: 'stopped', labels }) as Listed;
  const list = [item(1, 'web-1', { env: 'prod' }), item(2, 'web-2', { env: 'dev' }), item(3, 'db-1', { env: 'prod' })];
  t.deepEqual(
    resolveIn(list, ['web-*'], [], [['env', 'prod']]).found.map((f) => f.name),
    ['web-1'],
  );
  t.deepEqual(
    resolveIn(list, [], [], [['env', 'prod']]).found.map((f) => f.name),
    ['web-1', 'db-1'],
  );
  t.deepEqual(resolveIn(list, ['nope*'], []).unknown, [{ ref: 'nope*', message: 'no instance matches nope*' }]);
});
