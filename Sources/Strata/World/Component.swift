/// How soon a component's changes must reach the database (the specification, *Tiers*).
public enum Tier: Int, Sendable, CaseIterable, CustomStringConvertible {
    /// Hard to reconstruct: written within `critical_flush_delay_ms`, committed with `synchronous=FULL`.
    case critical = 0
    /// Constantly changing, reconstructible: written on the derived interval.
    case derived = 1
    /// Meaningless after a restart: never written.
    case ephemeral = 2

    public var description: String {
        switch self {
        case .critical: "critical"
        case .derived: "derived"
        case .ephemeral: "ephemeral"
        }
    }

    /// The tiers that reach the database.
    public static let persisted: [Tier] = [.critical, .derived]
}

/// A component: a Swift value type stored per entity and persisted by tier.
///
/// A component declares a stable persisted name (never rename it: the database keys
/// rows by it), its ``Tier`` and a payload version, and encodes itself in a compact
/// binary form. Bump `payloadVersion` when the encoding changes and keep decoding the
/// older versions, so a newer build reads an older save.
///
/// ```swift
/// struct Transform: Component {
///     static let typeName = "canvas.transform"
///     static let tier = Tier.derived
///     var x: Float, y: Float
///     func encode(to payload: inout PayloadWriter) { payload.write(x); payload.write(y) }
///     init(from payload: inout PayloadReader, version: Int) throws {
///         x = try payload.read(); y = try payload.read()
///     }
/// }
/// ```
public protocol Component: Equatable, Sendable {
    /// The name rows are stored under; stable across builds.
    static var typeName: String { get }
    /// When changes of this type reach the database.
    static var tier: Tier { get }
    /// The version of the encoding written by this build.
    static var payloadVersion: Int { get }
    /// Whether values of this type leave the device (``Replication/local`` unless declared).
    static var replication: Replication { get }

    /// Appends the binary encoding of `self`.
    func encode(to payload: inout PayloadWriter)
    /// Decodes a payload written with encoding `version` (≤ ``payloadVersion``).
    init(from payload: inout PayloadReader, version: Int) throws

    /// Strata's drain of this type's dirty keys, compiled with the conformance so that it
    /// is specialized for the type (`ComponentColumn+Drain.swift`). Provided by Strata;
    /// do not implement it.
    static func _strataDrain(_ column: AnyObject, _ context: UnsafeMutableRawPointer)
    /// Strata's decoding of a run of this type's stored values, specialized the same way
    /// (`ComponentColumn+Load.swift`). Provided by Strata; do not implement it.
    static func _strataLoad(_ column: AnyObject, _ context: UnsafeMutableRawPointer)
}

extension Component {
    public static var payloadVersion: Int { 1 }
    public static var replication: Replication { .local }
}
