import test from 'ava';
import { MIN_SECRET_LENGTH, REDACTED, SecretRedactor } from '../../../src/log/secret-redactor.js';

test('known secrets are masked wherever they appear, the longest first; short values are left alone', (t) => {
  const secrets = new SecretRedactor();
  t.is(secrets.redact('nothing known yet: s3cr3t'), 'nothing known yet: s3cr3t');
  secrets.set('instance 1 environment', ['s3cr3t', 's3cr3t-longer', 'abc']);
  t.is(MIN_SECRET_LENGTH, 4);
  t.is(secrets.redact('s3cr3t-longer and s3cr3t and abc'), `${REDACTED} and ${REDACTED} and abc`);
  t.is(secrets.redact('dial tcp s3cr3t:7000'), `dial tcp ${REDACTED}:7000`);
  t.is(secrets.redact('s3cr3ts3cr3t'), `${REDACTED}${REDACTED}`);
  t.is(secrets.redact('s3cr'), 's3cr');
  // Secrets that begin alike, among many others: each found whole.
  const many = Array.from({ length: 2000 }, (_, i) => `tok-${i.toString(36).padStart(4, '0')}-${i * 7919}`);
  secrets.set('many', many);
  t.is(secrets.redact(`x ${many[1999]} y ${many[0]}${many[1]}`), `x ${REDACTED} y ${REDACTED}${REDACTED}`);
  t.is(secrets.redact('tok-0000 tok-'), 'tok-0000 tok-', 'a beginning alone is not a secret');
});

test('sources replace their own secrets; a secret inside JSON (escaped) and inside values is masked too', (t) => {
  const secrets = new SecretRedactor();
  secrets.set('a', ['token-one']);
  secrets.set('b', ['pa"ss\\word']);
  t.is(secrets.redact('token-one'), REDACTED);
  secrets.set('a', ['token-two']);
  t.is(secrets.redact('token-one token-two'), `token-one ${REDACTED}`);
  t.is(secrets.redact(JSON.stringify({ line: 'pa"ss\\word' })), `{"line":"${REDACTED}"}`);

  const value = { message: 'failed: token-two', data: { list: ['x', 'token-two'], n: 7, ok: true, none: null } };
  t.deepEqual(secrets.redactValue(value), {
    message: `failed: ${REDACTED}`,
    data: { list: ['x', REDACTED], n: 7, ok: true, none: null },
  });
  t.is(value.message, 'failed: token-two', 'the value itself is not changed');
  const clean = { message: 'nothing here', data: [1, 'two'] };
  t.is(secrets.redactValue(clean), clean, 'nothing copied when nothing is masked');
  const buffer = Buffer.from('token-two');
  t.is(secrets.redactValue(buffer), buffer, 'only plain JSON values are read');

  // JSON text stays JSON: only its strings are masked, however short the secret.
  secrets.set('c', ['true']);
  t.is(
    secrets.redactJson('{"running":true,"said":"true enough","n":"token-two"}\n'),
    `{"running":true,"said":"${REDACTED} enough","n":"${REDACTED}"}\n`,
  );
  t.is(secrets.redactJson('not json: token-two'), `not json: ${REDACTED}`);
  const untouched = '{"running":true}';
  t.is(secrets.redactJson(untouched), untouched);

  // A large text served again (the instance list) is masked with what is known now, not what was.
  const big = JSON.stringify({ names: Array.from({ length: 3000 }, (_, i) => `name-${i}`) });
  t.is(secrets.redactJson(big), big);
  secrets.set('d', ['name-2999']);
  t.true(secrets.redactJson(big).endsWith(`"name-2998","${REDACTED}"]}`));

  secrets.forget('a');
  t.is(secrets.redact('token-two'), 'token-two');
});

test('a secret two sources hold stays masked until both let it go; a forgotten one is no longer masked', (t) => {
  const secrets = new SecretRedactor();
  secrets.set('instance 1 config', ['shared-token', 'only-one"quoted']);
  secrets.set('instance 2 config', ['shared-token', 'shared-token-longer']);
  t.is(secrets.redact('shared-token-longer shared-token'), `${REDACTED} ${REDACTED}`);
  secrets.forget('instance 1 config');
  t.is(secrets.redact('shared-token only-one"quoted'), `${REDACTED} only-one"quoted`);
  t.is(
    secrets.redact(JSON.stringify('only-one"quoted')),
    JSON.stringify('only-one"quoted'),
    'its JSON form is gone too',
  );
  secrets.set('instance 2 config', ['shared-token-longer']);
  t.is(secrets.redact('shared-token-longer shared-token'), `${REDACTED} shared-token`, 'the longer one found whole');
  // A thousand sources learnt one by one, masked between each: every one of them is found.
  for (let i = 0; i < 1000; i++) {
    secrets.set(`instance ${i} config`, [`admin-pass-${i}`]);
    t.is(secrets.redact(`x admin-pass-${i} y`), `x ${REDACTED} y`);
  }
  for (let i = 0; i < 1000; i++) secrets.forget(`instance ${i} config`);
  t.is(
    secrets.redact('admin-pass-7 admin-pass-999 shared-token-longer'),
    'admin-pass-7 admin-pass-999 shared-token-longer',
  );
});
