import Strata

/// Where a shape is: moves every tick while dragged (derived).
public struct ShapeTransform: Component {
    public static let typeName = "canvas.transform"
    public static let tier = Tier.derived
    public static let replication = Replication.lastWriterWins
    public var x: Float, y: Float, rotation: Float, scale: Float

    public init(x: Float, y: Float, rotation: Float = 0, scale: Float = 1) {
        self.x = x; self.y = y; self.rotation = rotation; self.scale = scale
    }
    public func encode(to p: inout PayloadWriter) { p.write(x); p.write(y); p.write(rotation); p.write(scale) }
    public init(from p: inout PayloadReader, version: Int) throws {
        x = try p.read(); y = try p.read(); rotation = try p.read(); scale = try p.read()
    }
}

/// What a shape looks like: set once by the user (critical).
public struct ShapeStyle: Component {
    public static let typeName = "canvas.shape_style"
    public static let tier = Tier.critical
    public static let replication = Replication.lastWriterWins
    public var kind: UInt8, color: UInt32

    public init(kind: UInt8, color: UInt32) { self.kind = kind; self.color = color }
    public func encode(to p: inout PayloadWriter) { p.write(kind); p.write(color) }
    public init(from p: inout PayloadReader, version: Int) throws { kind = try p.read(); color = try p.read() }
}

/// A stroke's pen: written when the stroke starts, and again when it ends (critical).
public struct StrokeStyle: Component {
    public static let typeName = "canvas.stroke_style"
    public static let tier = Tier.critical
    public static let replication = Replication.lastWriterWins
    public var color: UInt32, width: Float, finished: Bool

    public init(color: UInt32, width: Float, finished: Bool = false) { self.color = color; self.width = width; self.finished = finished }
    public func encode(to p: inout PayloadWriter) { p.write(color); p.write(width); p.write(finished) }
    public init(from p: inout PayloadReader, version: Int) throws { color = try p.read(); width = try p.read(); finished = try p.read() }
}

/// A stroke's points as x, y pairs: grows every tick while drawing (derived).
public struct StrokePoints: Component {
    public static let typeName = "canvas.stroke_points"
    public static let tier = Tier.derived
    public static let replication = Replication.lastWriterWins
    public var xy: [Float]

    public init(xy: [Float] = []) { self.xy = xy }
    public func encode(to p: inout PayloadWriter) { p.write(xy) }
    public init(from p: inout PayloadReader, version: Int) throws { xy = try p.read() }
}

/// Marks a stroke this device is drawing (critical, local: it never leaves the device).
/// A device that opens finishes only the strokes it marked: another device's stroke in
/// progress is that device's to end.
public struct DrawingHere: Component {
    public static let typeName = "canvas.drawing_here"
    public static let tier = Tier.critical

    public init() {}
    public func encode(to p: inout PayloadWriter) {}
    public init(from p: inout PayloadReader, version: Int) throws {}
}

/// The document's metadata (critical: the specification, *Tiers*).
public struct DocumentMetadata: Component {
    public static let typeName = "canvas.document"
    public static let tier = Tier.critical
    public static let replication = Replication.lastWriterWins
    public var name: String, revision: Int, modifiedAtMs: Int

    public init(name: String, revision: Int, modifiedAtMs: Int) { self.name = name; self.revision = revision; self.modifiedAtMs = modifiedAtMs }
    public func encode(to p: inout PayloadWriter) { p.write(name); p.write(revision); p.write(modifiedAtMs) }
    public init(from p: inout PayloadReader, version: Int) throws { name = try p.read(); revision = try p.read(); modifiedAtMs = try p.read() }
}

/// The viewport: UI state (derived).
public struct Viewport: Component {
    public static let typeName = "canvas.viewport"
    public static let tier = Tier.derived
    public var panX: Float, panY: Float, zoom: Float

    public init(panX: Float, panY: Float, zoom: Float) { self.panX = panX; self.panY = panY; self.zoom = zoom }
    public func encode(to p: inout PayloadWriter) { p.write(panX); p.write(panY); p.write(zoom) }
    public init(from p: inout PayloadReader, version: Int) throws { panX = try p.read(); panY = try p.read(); zoom = try p.read() }
}

/// A remote peer's cursor: meaningless after a restart (ephemeral).
public struct PeerCursor: Component {
    public static let typeName = "canvas.peer_cursor"
    public static let tier = Tier.ephemeral
    public var x: Float, y: Float

    public init(x: Float, y: Float) { self.x = x; self.y = y }
    public func encode(to p: inout PayloadWriter) { p.write(x); p.write(y) }
    public init(from p: inout PayloadReader, version: Int) throws { x = try p.read(); y = try p.read() }
}

/// Every component type of the canvas, for `Engine.open(components:)`.
public let canvasComponents: [any Component.Type] = [
    ShapeTransform.self, ShapeStyle.self, StrokeStyle.self, StrokePoints.self, DrawingHere.self,
    DocumentMetadata.self, Viewport.self, PeerCursor.self,
]
