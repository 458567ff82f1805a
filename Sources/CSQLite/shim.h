#ifndef STRATA_CSQLITE_SHIM_H
#define STRATA_CSQLITE_SHIM_H
#include <sqlite3.h>

/// `SQLITE_TRANSIENT` is a cast macro that Swift cannot import.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }

/// `sqlite3_config` is variadic. Turns off SQLite's memory statistics, whose global mutex every
/// allocation takes: with many reader threads it is a point of contention.
static inline int csqlite_disable_memory_statistics(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

#endif
