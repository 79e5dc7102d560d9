/* A thread-local word in an object of its own, for test_check: the leak scan reads the exiting
 * thread's thread-local variables of every loaded object but the checker's, and test_check is
 * the checker's object there (the engine is linked into it). */
#include <stdint.h>

_Thread_local uintptr_t check_test_tls_word;
