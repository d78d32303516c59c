// The module's umbrella header: the fault-injecting VFS (StrataTesting's FaultVFS).
#include "strata_fault_vfs.h"
