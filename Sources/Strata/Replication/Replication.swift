/// Whether a component type's values leave the device.
///
/// ```swift
/// struct Transform: Component {
///     static let typeName = "canvas.transform"
///     static let tier = Tier.derived
///     static let replication = Replication.lastWriterWins
///     …
/// }
/// ```
///
/// A replicated type needs no code from the host to sync. Each change of a value is logged
/// as an operation at the next critical flush (at most `[sync] replicate_interval_ms` after
/// it, one operation per changed value however often it changed), pushed and pulled with
/// the document's other operations, and applied on the other devices by stamp (the last
/// writer wins per entity and type; a despawn wins over every edit). The host hears what
/// another device changed through ``Engine/onReplicatedChange``. An entity replicates
/// with its replicated components; one with only local components never leaves the device.
/// Ephemeral types never replicate.
///
/// The type's mode is recorded in the document (`component_types.replication`) at every
/// open, so that tools reading the file (`strata inspect`) know which types replicate.
public enum Replication: String, Sendable, Codable, CaseIterable {
    /// Kept on this device only (a viewport, a selection): the default.
    case local
    /// Replicated to the document's other devices; concurrent edits of one component
    /// resolve to the edit with the highest stamp.
    case lastWriterWins = "last_writer_wins"
}
