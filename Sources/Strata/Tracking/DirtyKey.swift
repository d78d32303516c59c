/// One (entity slot, component type) pair whose persisted value may be out of date.
///
/// 8 bytes, no generation: a key is only a hint. The authoritative "is dirty" bit lives
/// in the component column (``ComponentColumn``), so stale or duplicate keys cost a
/// skipped iteration at drain time and never a wrong write.
struct DirtyKey: Hashable, Sendable {
    var entityIndex: UInt32
    var typeIndex: UInt32
}
