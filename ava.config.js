// Tests are compiled by `npm run build:all` (the `pretest` script) and run from dist/.
// Worker threads rather than a process per file: the files share one Node, which saves a start-up per file on a
// 2-core machine (every daemon and tunnel under test is a process of its own all the same).
export default {
  files: ['dist/test/**/*.test.js'],
  timeout: '60s',
  workerThreads: true,
  concurrency: 4,
};
