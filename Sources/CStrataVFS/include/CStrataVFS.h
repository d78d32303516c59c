// The module's umbrella header: the counting VFS and the fault-injecting VFS.
#include "strata_vfs.h"
#include "strata_fault_vfs.h"
