// The module's umbrella header: the counting VFS (the fault-injecting one is CStrataFaultVFS,
// for tests and `strata torture`, never linked into the library).
#include "strata_vfs.h"
