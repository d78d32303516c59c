import Strata

/// Where a shape is: moves every tick while dragged (derived).
struct ShapeTransform: Component {
    static let typeName = "canvas.transform"
    static let tier = Tier.derived
    var x: Float, y: Float, rotation: Float, scale: Float

    init(x: Float, y: Float, rotation: Float = 0, scale: Float = 1) {
        self.x = x; self.y = y; self.rotation = rotation; self.scale = scale
    }
    func encode(to p: inout PayloadWriter) { p.write(x); p.write(y); p.write(rotation); p.write(scale) }
    init(from p: inout PayloadReader, version: Int) throws {
        x = try p.read(); y = try p.read(); rotation = try p.read(); scale = try p.read()
    }
}

/// What a shape looks like: set once by the user (critical).
struct ShapeStyle: Component {
    static let typeName = "canvas.shape_style"
    static let tier = Tier.critical
    var kind: UInt8, color: UInt32

    init(kind: UInt8, color: UInt32) { self.kind = kind; self.color = color }
    func encode(to p: inout PayloadWriter) { p.write(kind); p.write(color) }
    init(from p: inout PayloadReader, version: Int) throws { kind = try p.read(); color = try p.read() }
}

/// A stroke's pen: written when the stroke starts, and again when it ends (critical).
struct StrokeStyle: Component {
    static let typeName = "canvas.stroke_style"
    static let tier = Tier.critical
    var color: UInt32, width: Float, finished: Bool

    init(color: UInt32, width: Float, finished: Bool = false) { self.color = color; self.width = width; self.finished = finished }
    func encode(to p: inout PayloadWriter) { p.write(color); p.write(width); p.write(finished) }
    init(from p: inout PayloadReader, version: Int) throws { color = try p.read(); width = try p.read(); finished = try p.read() }
}

/// A stroke's points as x, y pairs: grows every tick while drawing (derived).
struct StrokePoints: Component {
    static let typeName = "canvas.stroke_points"
    static let tier = Tier.derived
    var xy: [Float]

    init(xy: [Float] = []) { self.xy = xy }
    func encode(to p: inout PayloadWriter) { p.write(xy) }
    init(from p: inout PayloadReader, version: Int) throws { xy = try p.read() }
}

/// The document's metadata (critical, RFC 0002).
struct DocumentMetadata: Component {
    static let typeName = "canvas.document"
    static let tier = Tier.critical
    var name: String, revision: Int, modifiedAtMs: Int

    init(name: String, revision: Int, modifiedAtMs: Int) { self.name = name; self.revision = revision; self.modifiedAtMs = modifiedAtMs }
    func encode(to p: inout PayloadWriter) { p.write(name); p.write(revision); p.write(modifiedAtMs) }
    init(from p: inout PayloadReader, version: Int) throws { name = try p.read(); revision = try p.read(); modifiedAtMs = try p.read() }
}

/// The viewport: UI state (derived).
struct Viewport: Component {
    static let typeName = "canvas.viewport"
    static let tier = Tier.derived
    var panX: Float, panY: Float, zoom: Float

    init(panX: Float, panY: Float, zoom: Float) { self.panX = panX; self.panY = panY; self.zoom = zoom }
    func encode(to p: inout PayloadWriter) { p.write(panX); p.write(panY); p.write(zoom) }
    init(from p: inout PayloadReader, version: Int) throws { panX = try p.read(); panY = try p.read(); zoom = try p.read() }
}

/// A remote peer's cursor: meaningless after a restart (ephemeral).
struct PeerCursor: Component {
    static let typeName = "canvas.peer_cursor"
    static let tier = Tier.ephemeral
    var x: Float, y: Float

    init(x: Float, y: Float) { self.x = x; self.y = y }
    func encode(to p: inout PayloadWriter) { p.write(x); p.write(y) }
    init(from p: inout PayloadReader, version: Int) throws { x = try p.read(); y = try p.read() }
}

/// The operations last applied to a shape's transform and to its style (or to the
/// document's metadata), for "the last writer wins" across devices (critical: written
/// with the operation that set it).
struct EditStamps: Component {
    static let typeName = "canvas.edit_stamps"
    static let tier = Tier.critical
    var transform: OperationStamp, style: OperationStamp

    init(transform: OperationStamp = .zero, style: OperationStamp = .zero) { self.transform = transform; self.style = style }
    func encode(to p: inout PayloadWriter) {
        for stamp in [transform, style] { p.write(stamp.timestamp); p.write(stamp.nodeHigh); p.write(stamp.nodeLow) }
    }
    init(from p: inout PayloadReader, version: Int) throws {
        func stamp() throws -> OperationStamp { OperationStamp(timestamp: try p.read(), nodeHigh: try p.read(), nodeLow: try p.read()) }
        transform = try stamp()
        style = try stamp()
    }
}

let canvasComponents: [any Component.Type] = [
    ShapeTransform.self, ShapeStyle.self, StrokeStyle.self, StrokePoints.self,
    DocumentMetadata.self, Viewport.self, PeerCursor.self, EditStamps.self,
]
