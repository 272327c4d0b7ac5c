#include "app/win_args.h"

#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>
#include <shellapi.h>

#include "core/isa_check.h"

ML_GUARD_FN void ml_utf8_args(int *argc, char ***argv) {
    _setmode(_fileno(stdout), _O_BINARY);
    _setmode(_fileno(stderr), _O_BINARY);
    SetConsoleOutputCP(CP_UTF8);
    int n = 0;
    wchar_t **w = CommandLineToArgvW(GetCommandLineW(), &n);
    if (!w) return; /* keep the ANSI argv */
    char **a = calloc((size_t)n + 1, sizeof *a);
    for (int i = 0; a && i < n; i++) {
        int len = WideCharToMultiByte(CP_UTF8, 0, w[i], -1, NULL, 0, NULL, NULL);
        if (len <= 0 || !(a[i] = malloc((size_t)len))) return;
        WideCharToMultiByte(CP_UTF8, 0, w[i], -1, a[i], len, NULL, NULL);
    }
    LocalFree(w);
    if (!a) return;
    *argc = n;
    *argv = a;
}

