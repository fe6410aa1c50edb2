/**
 * Node options tunnelward runs with (package.json "start" says the same), each measured by the memory benchmark: a
 * small young generation; V8's heap sized for memory rather than speed (after a burst of a thousand starts the heap
 * stays near its live size); garbage collection on the main thread and one platform thread instead of one per core
 * (their stacks and buffers are resident for nothing in a mostly idle daemon). The database's WebAssembly stays in
 * its baseline code and JavaScript is optimised on the main thread: the optimising compilers' working memory, taken
 * on another thread, left ~7-10 MiB of that thread's allocator arena free but unreturnable (and ~6 MiB of the main
 * arena's after the database's start-up compile); the database's work is a small part of any request.
 */
export const NODE_FLAGS = [
  '--max-semi-space-size=1',
  '--optimize-for-size',
  '--single-threaded-gc',
  '--v8-pool-size=1',
  '--liftoff-only',
  '--no-wasm-tier-up',
  '--no-concurrent-recompilation',
];

/**
 * The C library's allocator, set the same way (glibc reads these; others ignore them): two arenas rather than one
 * per thread, and a fixed mmap threshold. Left to itself glibc raises the threshold to the largest block it has
 * freed, after which the daemon's large short-lived blocks (database snapshots) come from the heap and leave it
 * fragmented; fixed at 128 KiB they go back to the system when freed (~4 MiB less after a burst of a thousand
 * starts). Not lower: socket reads take 64 KiB blocks, which must stay in the heap.
 */
export const MALLOC_ENVIRONMENT: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=131072',
};
