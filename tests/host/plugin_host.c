/*
 * The C half of the host program of tests/tests/plugin.rs: a program that is not on mimalloc
 * loads the plugin (tests/plugin, a Rust cdylib on mimalloc) and calls into it from threads of
 * its own, as Node, Python or a JVM do with an addon. Written in C so that these threads are
 * plain OS threads the Rust runtime knows nothing of (no std thread-locals, no std
 * allocations): what the library sees is exactly what a foreign host shows it.
 *
 * The order of events is fixed here; tests/tests/plugin.rs checks what came of it.
 *   1. Call 0, on a thread of its own: loads the library first if asked to, calls in, and
 *      exits. (mimalloc 3.3.x: the next thread to allocate in the library died, upstream #1287.)
 *   2. Calls 1-4, each on a new thread, one thread at a time.
 *   3. Calls 5-8, on four threads at once.
 * Each call also keeps one block in the library for a later thread to free: the block of call
 * i is freed by call i + 1 during steps 1-2, and by the calling thread after step 3.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#include <windows.h>
typedef wchar_t host_char;
typedef HMODULE library;
typedef HANDLE thread;
#else
#include <dlfcn.h>
#include <pthread.h>
typedef char host_char;
typedef void *library;
typedef pthread_t thread;
#endif

/* CALLS in tests/tests/plugin.rs. */
#define HOST_CALLS 9
#define SEQUENTIAL_END 5

/* `HostRun` in tests/tests/plugin.rs. */
struct host_run {
  uint64_t sums[HOST_CALLS];      /* what plugin_work returned, per call */
  uint64_t kept_sums[HOST_CALLS]; /* what plugin_release returned for the block of each call */
  int uses_mimalloc;              /* plugin_uses_mimalloc(), asked on the calling thread */
  int owns_host_block;            /* plugin_owns(a block of the host's malloc) */
  int error;                      /* 0, or the step that failed (below) */
  char message[256];
};

enum { HOST_OK, HOST_LOAD_FAILED, HOST_SYMBOL_MISSING, HOST_THREAD_FAILED };

struct plugin {
  library lib;
  uint64_t (*work)(uint64_t seed, uint32_t blocks);
  void *(*keep)(uint64_t seed);
  uint64_t (*release)(void *block);
  int (*uses_mimalloc)(void);
  int (*owns)(const void *ptr);
};

struct call {
  const host_char *load; /* non-null: load the library from this path first */
  struct plugin *plugin;
  struct host_run *run;
  uint64_t seed;
  uint32_t blocks;
  uint64_t *sum;
  void *kept;              /* the block this call keeps */
  void *release;           /* a block of an earlier call, to free, or null */
  uint64_t *released_sum;  /* where its hash goes */
};

static void fail(struct host_run *run, int error, const char *what, const char *detail) {
  run->error = error;
  snprintf(run->message, sizeof run->message, "%s: %s", what, detail);
}

#ifdef _WIN32
/* GetProcAddress returns FARPROC; the double cast tells GCC the signature change is meant. */
#define SYMBOL(lib, name) ((void (*)(void))GetProcAddress((lib), (name)))
#else
#define SYMBOL(lib, name) dlsym((lib), (name))
#endif

static int load(struct plugin *p, const host_char *path, struct host_run *run) {
#ifdef _WIN32
  char code[32];
  p->lib = LoadLibraryW(path);
  if (p->lib == NULL) {
    snprintf(code, sizeof code, "error %lu", (unsigned long)GetLastError());
    fail(run, HOST_LOAD_FAILED, "LoadLibraryW", code);
    return 0;
  }
#else
  p->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (p->lib == NULL) {
    fail(run, HOST_LOAD_FAILED, "dlopen", dlerror());
    return 0;
  }
#endif
  p->work = (uint64_t (*)(uint64_t, uint32_t))SYMBOL(p->lib, "plugin_work");
  p->keep = (void *(*)(uint64_t))SYMBOL(p->lib, "plugin_keep");
  p->release = (uint64_t (*)(void *))SYMBOL(p->lib, "plugin_release");
  p->uses_mimalloc = (int (*)(void))SYMBOL(p->lib, "plugin_uses_mimalloc");
  p->owns = (int (*)(const void *))SYMBOL(p->lib, "plugin_owns");
  if (!p->work || !p->keep || !p->release || !p->uses_mimalloc || !p->owns) {
    fail(run, HOST_SYMBOL_MISSING, "a plugin_* export is missing", "see tests/plugin/src/lib.rs");
    return 0;
  }
  return 1;
}

static void call_plugin(struct call *c) {
  if (c->load != NULL && !load(c->plugin, c->load, c->run)) return;
  *c->sum = c->plugin->work(c->seed, c->blocks);
  c->kept = c->plugin->keep(c->seed);
  if (c->release != NULL) *c->released_sum = c->plugin->release(c->release);
}

#ifdef _WIN32
static DWORD WINAPI thread_main(LPVOID arg) {
  call_plugin(arg);
  return 0;
}
static int start(thread *t, struct call *c) {
  *t = CreateThread(NULL, 0, thread_main, c, 0, NULL);
  return *t != NULL;
}
static void join(thread t) {
  WaitForSingleObject(t, INFINITE);
  CloseHandle(t);
}
#else
static void *thread_main(void *arg) {
  call_plugin(arg);
  return NULL;
}
static int start(thread *t, struct call *c) { return pthread_create(t, NULL, thread_main, c) == 0; }
static void join(thread t) { pthread_join(t, NULL); }
#endif

/* Runs calls [from, to) on threads started together, and waits for them all. */
static int run_together(struct call *calls, int from, int to, struct host_run *run) {
  thread threads[HOST_CALLS];
  int started = from;
  while (started < to && start(&threads[started], &calls[started])) started++;
  for (int i = from; i < started; i++) join(threads[i]);
  if (started < to) fail(run, HOST_THREAD_FAILED, "starting a thread", "failed");
  return started == to && run->error == HOST_OK;
}

/*
 * Loads the plugin at `path` (on the thread of call 0 if `load_on_thread`, else right here),
 * makes the calls above with seeds `seed + i`, and fills `run`. Returns `run->error`.
 */
int mimalloc_tests_plugin_host(const host_char *path, int load_on_thread, uint64_t seed,
                               uint32_t blocks, struct host_run *run) {
  struct plugin plugin;
  struct call calls[HOST_CALLS];
  memset(run, 0, sizeof *run);
  memset(&plugin, 0, sizeof plugin);
  memset(calls, 0, sizeof calls);
  for (int i = 0; i < HOST_CALLS; i++) {
    calls[i].plugin = &plugin;
    calls[i].run = run;
    calls[i].seed = seed + (uint64_t)i;
    calls[i].blocks = blocks;
    calls[i].sum = &run->sums[i];
  }
  if (load_on_thread) {
    calls[0].load = path;
  } else if (!load(&plugin, path, run)) {
    return run->error;
  }
  for (int i = 0; i < SEQUENTIAL_END; i++) {
    if (i > 0) {
      calls[i].release = calls[i - 1].kept;
      calls[i].released_sum = &run->kept_sums[i - 1];
    }
    if (!run_together(calls, i, i + 1, run)) return run->error;
  }
  calls[SEQUENTIAL_END].release = calls[SEQUENTIAL_END - 1].kept;
  calls[SEQUENTIAL_END].released_sum = &run->kept_sums[SEQUENTIAL_END - 1];
  if (!run_together(calls, SEQUENTIAL_END, HOST_CALLS, run)) return run->error;
  for (int i = SEQUENTIAL_END; i < HOST_CALLS; i++) {
    run->kept_sums[i] = plugin.release(calls[i].kept);
  }
  run->uses_mimalloc = plugin.uses_mimalloc();
  void *mine = malloc(64);
  run->owns_host_block = plugin.owns(mine);
  free(mine);
  return HOST_OK;
}
