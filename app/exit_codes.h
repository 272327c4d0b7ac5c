/* Process exit codes of every legacy-ml executable. */
#ifndef ML_EXIT_CODES_H
#define ML_EXIT_CODES_H

#define ML_EXIT_OK 0
#define ML_EXIT_FAIL 1   /* the run failed: bad model, tokenizer, I/O, ... */
#define ML_EXIT_USAGE 2  /* bad command line */
#define ML_EXIT_ISA 3    /* this CPU cannot run this build (ISA guard) */

#endif
