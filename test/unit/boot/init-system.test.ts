import test from 'ava';
import { detectInitSystem } from '../../../src/boot/init-system.js';

test('the setting wins; auto picks systemd only where it runs and we are root', (t) => {
  const systemdHere = (path: string) => path === '/run/systemd/system';
  const nothing = () => false;
  for (const named of ['process', 'systemd', 'init.d', 'windows'] as const) {
    t.is(detectInitSystem(named, 'linux', nothing, false), named);
  }
  t.is(detectInitSystem('auto', 'linux', systemdHere, true), 'systemd');
  t.is(detectInitSystem('auto', 'linux', systemdHere, false), 'process', 'a user cannot manage system units');
  t.is(detectInitSystem('auto', 'linux', nothing, true), 'process');
  t.is(detectInitSystem('auto', 'win32', nothing, false), 'windows');
  t.is(detectInitSystem('auto', 'darwin', systemdHere, true), 'process');
});
