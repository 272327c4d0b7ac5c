/* A 32-bit build must open and map files over 2 GiB, to say why they cannot load. */
#define _FILE_OFFSET_BITS 64
#include "core/file.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(_WIN32)
#include <unistd.h>
#endif

#include "core/mem.h"
#include "core/path.h"
#include "core/quant.h"

#if defined(_WIN32)
#include <windows.h>
#elif !defined(ML_NO_MMAP)
#include <sys/mman.h>
#endif

/* ---- read fallback: the whole file in one aligned heap buffer ---------- */
static ml_status read_whole(ml_file *f, FILE *fp, const char *path, size_t size, ml_err *err) {
    unsigned char *buf = ml_large_alloc(size);
    if (!buf) return ml_errf(err, ML_E_NOMEM, "%s: cannot allocate %zu bytes to read it%s", path, size,
                             ML_ADDR32_HINT);
    if (fread(buf, 1, size, fp) != size) {
        ml_aligned_free(buf);
        return ml_errf(err, ML_E_IO, "%s: short read (expected %zu bytes)", path, size);
    }
    f->data = buf;
    f->kind = ML_FILE_HEAP;
    return ML_OK;
}

/* A regular file's size (ml_stat: 64 bits, UTF-8 paths on Windows too). A
 * folder where a file was expected is most likely a Hugging Face checkpoint. */
static ml_status regular_size(const char *path, uint64_t *size, ml_err *err) {
    ml_stat_t st;
    if (ml_stat(path, &st) != 0) return ml_errf(err, ML_E_IO, "%s: cannot open: %s", path, strerror(errno));
    if (st.is_dir)
        return ml_errf(err, ML_E_IO, "%s: a folder, not a file (a Hugging Face model folder converts with "
                       "tools/convert.py FOLDER OUT.mlb)", path);
    if (!st.is_reg) return ml_errf(err, ML_E_IO, "%s: not a regular file", path);
    *size = st.size;
    return ML_OK;
}

#if defined(_WIN32)
#if !defined(ML_NO_MMAP)
static ml_status map_whole(ml_file *f, const char *path, ml_err *err) {
    wchar_t w[ML_WPATH_MAX];
    HANDLE fh = INVALID_HANDLE_VALUE;
    if (ml_path_wide(path, w, ML_WPATH_MAX))
        fh = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
    if (fh == INVALID_HANDLE_VALUE)
        return ml_errf(err, ML_E_IO, "%s: cannot open: %s", path, strerror(ml_win_errno()));
    HANDLE mh = CreateFileMappingW(fh, NULL, PAGE_READONLY, 0, 0, NULL);
    CloseHandle(fh); /* the mapping keeps the file alive */
    if (!mh) return ml_errf(err, ML_E_IO, "%s: CreateFileMapping failed: %s", path, strerror(ml_win_errno()));
    const void *p = MapViewOfFile(mh, FILE_MAP_READ, 0, 0, 0);
    if (!p) {
        int e = ml_win_errno();
        CloseHandle(mh);
        return ml_errf(err, e == ENOMEM ? ML_E_NOMEM : ML_E_IO, "%s: MapViewOfFile of %zu bytes failed: %s%s",
                       path, f->size, strerror(e), e == ENOMEM ? ML_ADDR32_HINT : "");
    }
    f->data = p;
    f->handle = mh;
    f->kind = ML_FILE_MAPPED;
    return ML_OK;
}
#endif
#endif

#if !defined(_WIN32) && !defined(ML_NO_MMAP)
static ml_status map_whole(ml_file *f, FILE *fp, const char *path, ml_err *err) {
    void *p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fileno(fp), 0);
    if (p == MAP_FAILED)
        return ml_errf(err, errno == ENOMEM ? ML_E_NOMEM : ML_E_IO, "%s: mmap of %zu bytes failed: %s%s",
                       path, f->size, strerror(errno), errno == ENOMEM ? ML_ADDR32_HINT : "");
    f->data = p;
    f->kind = ML_FILE_MAPPED;
    return ML_OK;
}
#endif

/* Bytes of memory the system can give without swapping (Linux's
 * MemAvailable; elsewhere the free pages), 0 when unknown. */
static uint64_t mem_available(void) {
#if defined(__linux__)
    FILE *fp = fopen("/proc/meminfo", "r");
    if (!fp) return 0;
    char line[128];
    unsigned long long kib = 0;
    while (fgets(line, sizeof line, fp))
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
    fclose(fp);
    return (uint64_t)kib * 1024u;
#elif defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
#else
    return 0;
#endif
}

ml_status ml_file_open(ml_file *f, const char *path, int use_mmap, ml_err *err) {
    memset(f, 0, sizeof *f);
    uint64_t size = 0;
    ml_status s = regular_size(path, &size, err);
    if (s != ML_OK) return s;
    if (size > (uint64_t)SIZE_MAX - ML_ALIGN)
        return ml_errf(err, ML_E_NOMEM, "%s: %llu bytes do not fit in this address space%s", path,
                       (unsigned long long)size, ML_ADDR32_HINT);
    f->size = (size_t)size;
    if (f->size == 0) return ml_errf(err, ML_E_FORMAT, "%s: file is empty", path);
    /* Unknown memory, or a file over a quarter of a 32-bit address space:
     * map, which any size that fits can. */
    if (use_mmap == ML_FILE_AUTO) {
        uint64_t avail = mem_available();
        use_mmap = !(avail && size <= avail / 2 && size <= (uint64_t)SIZE_MAX / 4);
    }

#if defined(_WIN32) && !defined(ML_NO_MMAP)
    if (use_mmap) return map_whole(f, path, err);
#endif
    FILE *fp = ml_fopen(path, "rb");
    if (!fp) return ml_errf(err, ML_E_IO, "%s: cannot open: %s", path, strerror(errno));
#if !defined(_WIN32) && !defined(ML_NO_MMAP)
    s = use_mmap ? map_whole(f, fp, path, err) : read_whole(f, fp, path, f->size, err);
#else
    (void)use_mmap;
    s = read_whole(f, fp, path, f->size, err);
#endif
    fclose(fp);
    return s;
}

void ml_file_borrow(ml_file *f, const void *data, size_t size, int take) {
    memset(f, 0, sizeof *f);
    f->data = data;
    f->size = size;
    f->kind = take ? ML_FILE_TAKEN : ML_FILE_BORROWED;
}

const char *ml_file_kind_name(ml_file_kind k) {
    return k == ML_FILE_MAPPED ? "mapped" : k == ML_FILE_HEAP ? "read into memory" : "in memory";
}

void ml_file_close(ml_file *f) {
    if (!f->data) return;
    if (f->kind == ML_FILE_HEAP) {
        ml_aligned_free((void *)f->data);
    } else if (f->kind == ML_FILE_MAPPED) {
#if defined(_WIN32)
        UnmapViewOfFile(f->data);
        CloseHandle(f->handle);
#elif !defined(ML_NO_MMAP)
        munmap((void *)f->data, f->size);
#endif
    }
    memset(f, 0, sizeof *f);
}
