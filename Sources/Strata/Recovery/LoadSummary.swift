/// What a reload found.
public struct LoadSummary: Sendable, Equatable {
    public var entities = 0
    /// Components in the rebuilt world.
    public var components = 0
    /// Rows and records of component types this build does not register: kept in the
    /// database untouched.
    public var unknownTypeRows = 0
    /// Rows and records whose payload is newer than this build, or does not decode: kept, not loaded.
    public var undecodableRows = 0
    /// Rows written with an older payload version than this build's: loaded, and
    /// rewritten at their next change (or by maintenance, `[maintenance] rewrite_old_payloads`).
    public var olderPayloadRows = 0
    /// Segment rows replayed over the base rows, and the records in them.
    public var segments = 0
    public var segmentRecords = 0
    /// Segment rows that cannot be read (see `SegmentDamage`): kept, skipped.
    public var unreadableSegments = 0
    /// Records of live entities coded against a payload the log no longer has (a row
    /// before them lost or set aside): skipped; the component holds the newest of its
    /// values that could be read, if any.
    public var unresolvedRecords = 0
    /// Settings loaded, and those whose stored text this build cannot read (kept, not loaded).
    public var settings = 0
    public var unreadableSettings = 0
    /// Entity rows whose id is not 16 bytes or repeats an earlier row's: kept in the file,
    /// not loaded.
    public var malformedEntityRows = 0
    /// Base rows of an entity number that has no entity row: kept, not loaded.
    public var orphanRows = 0
}
