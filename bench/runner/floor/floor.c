/* The per-operation floor: a C loop calling mimalloc directly, compiled against the same
   vendored sources with the same defines as mimalloc-sys (the runner's `instructions` command
   builds it). Each loop mirrors one of the Rust driver's `pairs` loops, so that the difference
   between a loop and the empty one is the cost of one allocate+free pair. */
#include <mimalloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The pointer escapes to the compiler: it can neither drop the pair nor the copy. */
static inline void escape(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

__attribute__((noinline)) static void empty_loop(unsigned long n, unsigned char byte) {
  for (unsigned long i = 0; i < n; i++) {
    unsigned char value[32];
    memset(value, byte, sizeof value);
    escape(value);
  }
}

typedef void *(*allocate)(size_t);

/* The allocation function is a parameter, called through a pointer the compiler knows
   (constant-propagated after inlining into main's direct calls), so each variant compiles to a
   direct call. */
static inline __attribute__((always_inline)) void malloc_pairs(unsigned long n, unsigned char byte,
                                                               allocate alloc) {
  for (unsigned long i = 0; i < n; i++) {
    unsigned char value[32];
    memset(value, byte, sizeof value);
    escape(value);
    void *p = alloc(sizeof value);
    memcpy(p, value, sizeof value);
    escape(p);
    mi_free(p);
  }
}

static inline __attribute__((always_inline)) void zalloc_pairs(unsigned long n, allocate alloc) {
  for (unsigned long i = 0; i < n; i++) {
    void *p = alloc(32);
    escape(p);
    mi_free(p);
  }
}

__attribute__((noinline)) static void malloc32(unsigned long n, unsigned char b) { malloc_pairs(n, b, mi_malloc); }
__attribute__((noinline)) static void malloc_small32(unsigned long n, unsigned char b) { malloc_pairs(n, b, mi_malloc_small); }
__attribute__((noinline)) static void zalloc32(unsigned long n) { zalloc_pairs(n, mi_zalloc); }
__attribute__((noinline)) static void zalloc_small32(unsigned long n) { zalloc_pairs(n, mi_zalloc_small); }

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: floor empty|malloc32|malloc_small32|zalloc32|zalloc_small32 COUNT\n");
    return 2;
  }
  unsigned long n = strtoul(argv[2], NULL, 10);
  unsigned char byte = (unsigned char)n;
  if (strcmp(argv[1], "empty") == 0) empty_loop(n, byte);
  else if (strcmp(argv[1], "malloc32") == 0) malloc32(n, byte);
  else if (strcmp(argv[1], "malloc_small32") == 0) malloc_small32(n, byte);
  else if (strcmp(argv[1], "zalloc32") == 0) zalloc32(n);
  else if (strcmp(argv[1], "zalloc_small32") == 0) zalloc_small32(n);
  else return 2;
  return 0;
}
