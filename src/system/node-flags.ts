/**
 * Node options tunnelward runs with (package.json "start" says the same), each measured by the memory benchmark: a
 * small young generation; V8's heap sized for memory rather than speed (after a burst of a thousand starts the heap
 * stays near its live size); garbage collection on the main thread and one platform thread instead of one per core
 * (their stacks and buffers are resident for nothing in a mostly idle daemon).
 */
export const NODE_FLAGS = [
  '--max-semi-space-size=1',
  '--optimize-for-size',
  '--single-threaded-gc',
  '--v8-pool-size=1',
];
