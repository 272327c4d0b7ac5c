/* A persistent pool of worker threads (DESIGN §6: THREADS=pthread builds,
 * and Windows builds with CMake's ML_THREADS, on Win32 threads). A parallel region is n work items; the calling thread and the
 * workers take ranges of them from a shared counter until none are left,
 * so a thread that the OS has descheduled (a busy machine, more threads
 * than cores) holds up nobody: whoever runs takes its share. The caller
 * waits only for ranges already taken. Waiters spin (a token issues a
 * region every few microseconds), then sleep on a condition variable; they
 * never yield, which would hand the core to any busy neighbour for a whole
 * time slice (docs/THREADS.md has the measurements). */
#ifndef ML_THREADS_H
#define ML_THREADS_H

#include "core/status.h"

/* 1 in a build with a real pool (POSIX or Win32 threads, core/thread_os.h). */
#if defined(ML_THREADS_pthread) || defined(ML_THREADS_win32)
#define ML_HAS_THREADS 1
#else
#define ML_HAS_THREADS 0
#endif

/* A region's work on items [i0, i1). The ranges of one region are disjoint
 * and cover 0..n-1 exactly once; any thread may run any range, so an
 * item's result must not depend on who computes it or with what others. */
typedef void (*ml_task_fn)(void *ctx, int i0, int i1);

typedef struct ml_pool ml_pool;

/* n threads in total (n >= 1); the caller is one of them. */
ml_status ml_pool_create(ml_pool **out, int n, ml_err *err);
void ml_pool_destroy(ml_pool *p);
int ml_pool_size(const ml_pool *p);

/* Run fn over items 0..n-1 and return when every item is done. */
void ml_pool_run(ml_pool *p, ml_task_fn fn, void *ctx, int n);

/* The default thread count: the CPUs this process may run on
 * (sched_getaffinity on Linux), at most ML_THREADS_DEFAULT_MAX; 1 in a
 * THREADS=1 build. */
#define ML_THREADS_DEFAULT_MAX 8
int ml_threads_default(void);

#endif
