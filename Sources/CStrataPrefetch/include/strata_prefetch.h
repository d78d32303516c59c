// A cache prefetch hint, which Swift has no spelling for: the tick thread asks for the
// memory an operation a few places ahead will touch while it works on this one.
#ifndef STRATA_PREFETCH_H
#define STRATA_PREFETCH_H

static inline void strata_prefetch(const void *address) {
    __builtin_prefetch(address, 0, 3);
}

#endif
