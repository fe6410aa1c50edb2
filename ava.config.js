// Tests are compiled by `npm run build` (the `pretest` script) and run from dist/.
export default {
  files: ['dist/test/**/*.test.js'],
  timeout: '60s',
  workerThreads: false,
  concurrency: 4,
};
