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
/// The type's mode is recorded in the document (`component_types.replication`) at every
/// open, so that tools reading the file (`strata inspect`) know which types replicate.
public enum Replication: String, Sendable, Codable, CaseIterable {
    /// Kept on this device only (a viewport, a selection): the default.
    case local
    /// Replicated to the document's other devices; concurrent edits of one component
    /// resolve to the edit with the highest stamp.
    case lastWriterWins = "last_writer_wins"
}
