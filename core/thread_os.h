/* The few OS primitives the thread pool (core/threads.c) is built from:
 * threads, a mutex, condition variables, a monotonic clock, the CPU count
 * and a spin-wait hint. POSIX threads (THREADS=pthread), or Win32 threads
 * on Windows (ML_THREADS_win32, which CMake picks there): the pool's logic
 * is the same for both. Included by core/threads.c only. */
#ifndef ML_THREAD_OS_H
#define ML_THREAD_OS_H

#include <stdint.h>

#if defined(ML_THREADS_win32)
#include <windows.h>

typedef HANDLE ml_thread;
typedef SRWLOCK ml_mutex;
typedef CONDITION_VARIABLE ml_cond;
/* A thread's entry point: ML_THREAD_FN(name, arg) { ... return ML_THREAD_END; } */
#define ML_THREAD_FN(name, arg) static DWORD WINAPI name(LPVOID arg)
#define ML_THREAD_END 0

static inline int ml_thread_start(ml_thread *t, LPTHREAD_START_ROUTINE fn, void *arg) {
    *t = CreateThread(NULL, 0, fn, arg, 0, NULL);
    return *t ? 0 : -1;
}
static inline void ml_thread_join(ml_thread t) {
    WaitForSingleObject(t, INFINITE);
    CloseHandle(t);
}
static inline void ml_mutex_init(ml_mutex *m) { InitializeSRWLock(m); }
static inline void ml_mutex_destroy(ml_mutex *m) { (void)m; }
static inline void ml_mutex_lock(ml_mutex *m) { AcquireSRWLockExclusive(m); }
static inline void ml_mutex_unlock(ml_mutex *m) { ReleaseSRWLockExclusive(m); }
static inline void ml_cond_init(ml_cond *c) { InitializeConditionVariable(c); }
static inline void ml_cond_destroy(ml_cond *c) { (void)c; }
static inline void ml_cond_wait(ml_cond *c, ml_mutex *m) { SleepConditionVariableSRW(c, m, INFINITE, 0); }
static inline void ml_cond_broadcast(ml_cond *c) { WakeAllConditionVariable(c); }

static inline int64_t ml_now_ns(void) {
    LARGE_INTEGER t, f;
    QueryPerformanceCounter(&t);
    QueryPerformanceFrequency(&f);
    return (int64_t)((double)t.QuadPart * 1e9 / (double)f.QuadPart);
}
static inline long ml_cpu_count(void) { return (long)GetActiveProcessorCount(ALL_PROCESSOR_GROUPS); }
static inline void ml_cpu_relax(void) { YieldProcessor(); }

#else /* POSIX threads */
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

typedef pthread_t ml_thread;
typedef pthread_mutex_t ml_mutex;
typedef pthread_cond_t ml_cond;
#define ML_THREAD_FN(name, arg) static void *name(void *arg)
#define ML_THREAD_END NULL

static inline int ml_thread_start(ml_thread *t, void *(*fn)(void *), void *arg) {
    return pthread_create(t, NULL, fn, arg);
}
static inline void ml_thread_join(ml_thread t) { pthread_join(t, NULL); }
static inline void ml_mutex_init(ml_mutex *m) { pthread_mutex_init(m, NULL); }
static inline void ml_mutex_destroy(ml_mutex *m) { pthread_mutex_destroy(m); }
static inline void ml_mutex_lock(ml_mutex *m) { pthread_mutex_lock(m); }
static inline void ml_mutex_unlock(ml_mutex *m) { pthread_mutex_unlock(m); }
static inline void ml_cond_init(ml_cond *c) { pthread_cond_init(c, NULL); }
static inline void ml_cond_destroy(ml_cond *c) { pthread_cond_destroy(c); }
static inline void ml_cond_wait(ml_cond *c, ml_mutex *m) { pthread_cond_wait(c, m); }
static inline void ml_cond_broadcast(ml_cond *c) { pthread_cond_broadcast(c); }

static inline int64_t ml_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
/* The CPUs this process may run on (sched_getaffinity), else those online. */
static inline long ml_cpu_count(void) {
    long n = 0;
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
#endif
#if defined(_SC_NPROCESSORS_ONLN)
    if (n < 1) n = sysconf(_SC_NPROCESSORS_ONLN);
#endif
    return n;
}
static inline void ml_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || (defined(__arm__) && __ARM_ARCH >= 7)
    __asm__ __volatile__("yield");
#endif
}
#endif

#endif
