/* Output files that never destroy a user's file (README, "Reliability").
 *
 * A regular file (or a path that does not exist yet) is written to a fresh,
 * uniquely named temporary beside it and renamed over it only by
 * ml_outfile_commit, once complete: until then, and after ml_outfile_abort
 * or a failed commit, the target keeps its previous content and the
 * temporary is gone. A symbolic link is followed: the file it points to is
 * replaced, the link stays. A file without any write permission is
 * refused (not replaced). Character devices, FIFOs and sockets
 * (/dev/null, a pipe, /dev/stdout) are written through; directories, block
 * devices and anything else are refused, and are never replaced.
 *
 * ml_outfile_check refuses an output that is one of the run's inputs (the
 * same file by device and inode, so through links too), before any work. */
#ifndef ML_OUTFILE_H
#define ML_OUTFILE_H

#include <stdio.h>

#include "core/status.h"

/* An input of the run, for the messages: what = "the model -m". */
typedef struct {
    const char *what, *path;
} ml_named_path;

/* ML_E_ARG if the output (named what, e.g. "--logits") is the same file as
 * one of the n inputs (NULL paths are skipped); the message names both. */
ml_status ml_outfile_check(const char *what, const char *path, const ml_named_path *inputs, int n,
                           ml_err *err);

/* 1 if the two outputs a and b would land in one file: the same existing
 * file (by device and inode: other spellings, links), or two spellings of
 * one name that does not exist yet. A device or pipe is written through,
 * so two outputs may share it. */
int ml_outfile_same(const char *a, const char *b);

/* Longest path of a target or its temporary (no allocation: the library
 * allocates at load time only). */
#define ML_OUTFILE_PATH_MAX 4096

typedef struct {
    FILE *f;          /* write here */
    const char *path; /* the target, as named */
    int replaces;     /* the target exists: commit replaces it */
    int through;      /* written through (a device or pipe): no temporary */
    char target[ML_OUTFILE_PATH_MAX]; /* renamed over (for a link: its file) */
    char tmp[ML_OUTFILE_PATH_MAX];    /* the temporary; "" when none */
    int live;                         /* its slot in the list of temporaries; -1: none */
} ml_outfile;

/* Open an output for writing (what names it in messages). */
ml_status ml_outfile_open(ml_outfile *o, const char *what, const char *path, ml_err *err);

/* Flush, sync and rename into place. On failure the temporary is removed
 * and the target keeps its previous content. Closes o either way. */
ml_status ml_outfile_commit(ml_outfile *o, ml_err *err);

/* Close and remove the temporary; the target keeps its previous content.
 * Safe on a zeroed, closed or committed o. */
void ml_outfile_abort(ml_outfile *o);

/* Remove every temporary still being written (async-signal-safe: for a
 * handler of SIGINT or SIGTERM, before the program dies of it). The
 * targets keep their previous content. */
void ml_outfile_remove_temporaries(void);

#endif
