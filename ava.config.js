// Tests are compiled by `npm run build:all` (the `pretest` script) and run from dist/.
// A process per file, not worker threads: in worker threads the exit of a child process was seen going unnoticed
// for minutes (a test awaiting a daemon's exit hung until the suite's timeout) on a loaded machine.
export default {
  files: ['dist/test/**/*.test.js'],
  timeout: '60s',
  workerThreads: false,
  concurrency: 4,
};
