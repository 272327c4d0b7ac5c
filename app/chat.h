/* ml_run --chat: an interactive multi-turn chat on stdin/stdout through a
 * chat template (lml_chat_*, include/legacy_ml.h), the KV cache kept across turns. */
#ifndef ML_APP_CHAT_H
#define ML_APP_CHAT_H

/* Does the command line ask for a chat (--chat)? */
int ml_chat_wanted(int argc, char **argv);
/* The chat: ml_run's options plus --system TEXT and --chat-template NAME.
 * Returns the exit code. */
int ml_chat_main(int argc, char **argv);

#endif
