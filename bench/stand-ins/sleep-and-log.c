/* A tunnel-client stand-in for scale benchmarks: takes -c <file> like frpc, says it started, then sleeps; and
   `verify -c <file>` (what tunnelward asks of a new file) finds any file readable good.
   One small process per tunnel, so that neither the host's memory nor its CPU is what limits a thousand. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "verify") == 0 && strcmp(argv[2], "-c") == 0 && access(argv[3], R_OK) == 0) {
    printf("frpc: the configuration file %s syntax is ok\n", argv[3]);
    return 0;
  }
  if (argc < 3 || strcmp(argv[1], "-c") != 0 || access(argv[2], R_OK) != 0) {
    fprintf(stderr, "usage: %s -c <config file>\n", argv[0]);
    return 1;
  }
  printf("[I] stand-in started with config file [%s]\n", argv[2]);
  fflush(stdout);
  for (;;) pause();
}
