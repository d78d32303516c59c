/// What a member may do with a document: readers pull, writers push too, owners also
/// manage the members (`strata-server members`).
public enum Role: String, Sendable, Comparable, CaseIterable {
    case reader, writer, owner

    private var rank: Int {
        switch self {
        case .reader: 0
        case .writer: 1
        case .owner: 2
        }
    }

    public static func < (a: Role, b: Role) -> Bool { a.rank < b.rank }
}
