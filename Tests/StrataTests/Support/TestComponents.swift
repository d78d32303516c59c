import Strata

/// A derived component: moves every tick while dragged.
struct Position: Component, Equatable {
    static let typeName = "test.position"
    static let tier = Tier.derived
    var x: Float
    var y: Float

    init(x: Float, y: Float) { self.x = x; self.y = y }
    func encode(to payload: inout PayloadWriter) { payload.write(x); payload.write(y) }
    init(from payload: inout PayloadReader, version: Int) throws { x = try payload.read(); y = try payload.read() }
}

/// A critical component: document metadata.
struct Title: Component, Equatable {
    static let typeName = "test.title"
    static let tier = Tier.critical
    var text: String
    var revision: Int

    init(_ text: String, revision: Int = 0) { self.text = text; self.revision = revision }
    func encode(to payload: inout PayloadWriter) { payload.write(text); payload.write(revision) }
    init(from payload: inout PayloadReader, version: Int) throws { text = try payload.read(); revision = try payload.read() }
}

/// An ephemeral component: never written.
struct Cursor: Component, Equatable {
    static let typeName = "test.cursor"
    static let tier = Tier.ephemeral
    var x: Float

    init(x: Float) { self.x = x }
    func encode(to payload: inout PayloadWriter) { payload.write(x) }
    init(from payload: inout PayloadReader, version: Int) throws { x = try payload.read() }
}

let testComponents: [any Component.Type] = [Position.self, Title.self, Cursor.self]

/// ``Title`` as a newer build writes it: encoding version 2, with a subtitle.
struct TitleV2: Component, Equatable {
    static let typeName = Title.typeName
    static let tier = Tier.critical
    static let payloadVersion = 2
    var text: String
    var subtitle: String

    init(text: String, subtitle: String) { self.text = text; self.subtitle = subtitle }
    func encode(to payload: inout PayloadWriter) { payload.write(text); payload.write(subtitle) }
    init(from payload: inout PayloadReader, version: Int) throws {
        text = try payload.read()
        subtitle = version >= 2 ? try payload.read() : ""
        if version == 1 { _ = try payload.read() as Int }
    }
}

/// A derived component of varying size (records of different lengths in the log).
struct Tags: Component, Equatable {
    static let typeName = "test.tags"
    static let tier = Tier.derived
    var bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }
    func encode(to payload: inout PayloadWriter) { payload.write(bytes) }
    init(from payload: inout PayloadReader, version: Int) throws { bytes = try payload.read() }
}

/// A replicated component type: its values leave the device.
struct SharedPosition: Component, Equatable {
    static let typeName = "test.shared_position"
    static let tier = Tier.derived
    static let replication = Replication.lastWriterWins
    var x: Float
    var y: Float

    init(x: Float, y: Float) { self.x = x; self.y = y }
    func encode(to payload: inout PayloadWriter) { payload.write(x); payload.write(y) }
    init(from payload: inout PayloadReader, version: Int) throws { x = try payload.read(); y = try payload.read() }
}
