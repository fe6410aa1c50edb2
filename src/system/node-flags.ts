/**
 * Node options tunnelward runs with (package.json "start" says the same), each measured by the memory benchmark: a
 * small young generation (what a request leaves behind is collected young instead of growing the old generation);
 * one platform thread instead of one per core. The database's WebAssembly stays in its baseline code: its optimising
 * compiler's working memory, taken on the platform thread, left ~7-10 MiB of that thread's allocator arena free but
 * unreturnable; the database's work is a small part of any request. What a burst of commands leaves in the heap is
 * given back at its end (src/system/memory-reclaim.ts), not by sizing V8 for memory (`--optimize-for-size`), which
 * made bulk commands 40-70% slower. The same module gives back other growth of the heap on the rule of V8's memory
 * reducer, which is off: after the collection at a burst's end it collected the heap twice more, 8 s later, for
 * nothing (1000 tunnels: ~150 ms of CPU, idle CPU in the 30 s after a start of all 0.57-0.63% with it, 0.03% without).
 */
export const NODE_FLAGS = [
  '--max-semi-space-size=1',
  '--v8-pool-size=1',
  '--liftoff-only',
  '--no-wasm-tier-up',
  '--no-memory-reducer',
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
