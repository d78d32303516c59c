// The header is all there is (an inline function); SwiftPM wants a source file per C target.
#include "strata_prefetch.h"
