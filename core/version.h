/* The project's version (semantic versioning; CHANGELOG.md says what each
 * one holds). The one place it is written: the programs print it with
 * --version (app/main_guard.c); the build files do not read it. */
#ifndef ML_VERSION_H
#define ML_VERSION_H

#define ML_VERSION "0.3.0"

#endif
