/* Windows start-up (app/main_guard.c calls it first; CMake builds it on
 * Windows only): argv in UTF-8, read from the wide command line, since the
 * narrow argv is in the ANSI code page; stdout/stderr binary (the same bytes
 * as on POSIX, "\n" not "\r\n") and a UTF-8 console. The strings live until
 * the process exits. */
#ifndef ML_WIN_ARGS_H
#define ML_WIN_ARGS_H

void ml_utf8_args(int *argc, char ***argv);

#endif
