import Foundation
import Strata

/// A drawing canvas driven by a seeded script: shapes created and deleted, shapes
/// dragged (derived transforms), strokes drawn (start critical, points derived, end a
/// flush event; a thumbnail job queued for each finished one; now and then one erased),
/// document metadata edited, peer cursors moving (ephemeral).
///
/// Shapes, strokes and the metadata are replicated components: with a sync, other
/// devices see every change with no code here (`CanvasScenario+Replication.swift`).
/// Without one, a simulated peer's operations arrive now and then (some twice, some out
/// of order).
///
/// Tick thread. Every critical change and every logged operation is reported to `trace`
/// (the crash test checks them against the database after a SIGKILL; the benchmark counts
/// them).
///
/// The canvas is `strata sim`'s document, `strata torture`'s workload and, with
/// `strata bench --workload canvas`, a benchmark of every kind of data the engine keeps.
public final class CanvasScenario {
    public let engine: Engine
    public var world: World { engine.world }
    private var rng: SplitMix64
    private let targetShapes: Int
    private let hz: Double
    private let trace: (any CanvasObserver)?
    /// Multiplies the rate of every action after the canvas is full (`strata torture`
    /// runs busy canvases: more changes of every tier per second).
    private let activity: Double
    /// Seconds the canvas takes to grow to its target (a level load, an import).
    private let growSeconds: Double

    public internal(set) var shapes: [Entity] = []
    public internal(set) var document: Entity
    private var viewport: Entity
    var drag: (shape: Entity, ticksLeft: Int, dx: Float, dy: Float)?
    var stroke: (entity: Entity, ticksLeft: Int)?
    /// Finished strokes (an eraser picks among them).
    public internal(set) var strokes: [Entity] = []
    /// The entities in `shapes` and `strokes`.
    var listed = EntityMembership()
    /// A shape is being dragged or a stroke drawn: this tick changed derived state.
    public var isEditing: Bool { drag != nil || stroke != nil }
    /// Synced with other devices (`strata sim --sync`): their operations replace the simulated peer's.
    let syncing: Bool
    /// The eraser's own random stream: the other actions' script stays what it was.
    private var eraserRNG: SplitMix64
    private var peer = SimulatedPeer()
    private(set) var tick = 0

    public init(engine: Engine, targetShapes: Int, hz: Int, seed: UInt64, trace: (any CanvasObserver)?, activity: Double = 1,
                syncing: Bool = false, growSeconds: Double = 5) {
        self.engine = engine
        self.growSeconds = max(growSeconds, 1 / Double(hz))
        self.syncing = syncing
        self.activity = activity
        self.rng = SplitMix64(seed: seed)
        self.eraserRNG = SplitMix64(seed: seed ^ 0x5EED_E4A5)
        self.targetShapes = targetShapes
        self.hz = Double(hz)
        self.trace = trace
        let world = engine.world

        // Resume what the database holds.
        shapes = world.entities(with: ShapeStyle.self).map(\.entity)
        // A stroke this device left unfinished (killed while drawing) is finished as drawn:
        // its points up to the kill are on every device already, and it stays. Another
        // device's unfinished stroke is that device's to end (it may be drawing it now).
        for (entity, _) in world.entities(with: DrawingHere.self) {
            world.mutate(StrokeStyle.self, of: entity) { $0.finished = true }
            world.remove(DrawingHere.self, from: entity)
        }
        strokes = world.entities(with: StrokeStyle.self).filter(\.value.finished).map(\.entity)
        for entity in shapes + strokes { listed.insert(entity) }
        if let existing = world.entities(with: DocumentMetadata.self).first {
            document = existing.entity
        } else {
            // The same id in every document: devices that sync share one metadata entity.
            // The entity may be there without its metadata (it did not decode, or a salvage
            // lost it; the start reported which): the metadata starts again on it. Either
            // way a default: it loses to any metadata another device wrote (a device opening
            // a shared document before it pulled must not reset it).
            let alive = world.entity(for: Self.documentID)
            document = alive ?? world.spawn(id: Self.documentID)
            world.insertDefault(DocumentMetadata(name: "Untitled", revision: 0, modifiedAtMs: 0), for: document)
            if alive == nil { trace?.record(.spawn, Self.documentID) }
        }
        if let existing = world.entities(with: Viewport.self).first {
            viewport = existing.entity
        } else {
            viewport = world.spawn(Viewport(panX: 0, panY: 0, zoom: 1))
            if let id = world.id(of: viewport) { trace?.record(.spawn, id) }
        }
        // A peer's cursor rides on the viewport: ephemeral, so never written.
        world.insert(PeerCursor(x: 0, y: 0), for: viewport)
        engine.onReplicatedChange = { [weak self] change in self?.replicated(change) }
    }

    /// Advances the canvas by one tick.
    public func step() {
        tick += 1
        let perSecond = activity / hz

        world.mutate(PeerCursor.self, of: viewport) { $0.x += Float.random(in: -2 ... 2, using: &rng); $0.y += 1 }

        // Create and delete: grow to the target, then churn around it.
        let spawnRate = max(2.0, Double(targetShapes) / growSeconds) * perSecond
        if shapes.count < targetShapes {
            // At most 10k a tick: a huge target grows over many ticks, each one short.
            let burst = min(targetShapes - shapes.count, max(1, Int(min(spawnRate, 10_000).rounded(.up))))
            for _ in 0 ..< burst { spawnShape() }
        } else if rng.chance(2 * perSecond) {
            spawnShape()
            despawnShape()
        }

        // Drag: a shape follows the pointer for 1–3 s.
        if let current = drag {
            world.mutate(ShapeTransform.self, of: current.shape) { $0.x += current.dx; $0.y += current.dy }
            drag = current.ticksLeft > 1 ? (current.shape, current.ticksLeft - 1, current.dx, current.dy) : nil
            engine.noteInput()
            if drag == nil, syncing { engine.flush(reason: .majorAction) }   // a drag ended: where it stopped
        } else if !shapes.isEmpty, rng.chance(0.8 * perSecond) {
            let shape = shapes[Int.random(in: 0 ..< shapes.count, using: &rng)]
            drag = (shape, Int(hz * Double.random(in: 1 ... 3, using: &rng)),
                    Float.random(in: -3 ... 3, using: &rng), Float.random(in: -3 ... 3, using: &rng))
        }

        // Strokes: start (critical), points (derived), end (critical + flush event).
        if let current = stroke {
            world.mutate(StrokePoints.self, of: current.entity) {
                $0.xy.append(Float(tick)); $0.xy.append(Float.random(in: 0 ... 1000, using: &rng))
            }
            engine.noteInput()
            if current.ticksLeft > 1 {
                stroke = (current.entity, current.ticksLeft - 1)
            } else {
                stroke = nil
                world.mutate(StrokeStyle.self, of: current.entity) { $0.finished = true }
                world.remove(DrawingHere.self, from: current.entity)
                engine.flush(reason: .majorAction)
                if let id = world.id(of: current.entity) {   // not despawned by another device meanwhile
                    trace?.record(.strokeEnd, id)
                    // Its thumbnail, rendered by a worker (Thumbnails.swift), durable within milliseconds.
                    engine.jobs.enqueueSoon(Thumbnails.kind, for: id, payload: Thumbnails.payload(world.get(StrokePoints.self, for: current.entity)?.xy ?? []))
                    strokes.append(current.entity)
                    listed.insert(current.entity)
                }
            }
        } else if rng.chance(0.25 * perSecond) {
            let entity = world.spawn(StrokeStyle(color: UInt32.random(in: 0 ... 0xFFFFFF, using: &rng), width: 2),
                                     StrokePoints(), DrawingHere())
            if let id = world.id(of: entity) { trace?.record(.spawn, id) }
            stroke = (entity, Int(hz * Double.random(in: 0.5 ... 1.5, using: &rng)))
        }

        // The eraser: a finished stroke goes, its thumbnail job and file with it.
        if !strokes.isEmpty, eraserRNG.chance(0.05 * perSecond) {
            let i = Int.random(in: 0 ..< strokes.count, using: &eraserRNG)
            strokes.swapAt(i, strokes.count - 1)
            let entity = strokes.removeLast()
            listed.remove(entity)
            if let id = world.id(of: entity) {
                world.despawn(entity)
                trace?.record(.despawn, id)
                engine.flush(reason: .majorAction)
            }
        }

        // Metadata edits: a major action, flushed within the critical delay.
        if rng.chance(0.2 * perSecond) {
            let revision = world.mutate(DocumentMetadata.self, of: document) { meta -> Int in
                meta.revision += 1
                meta.modifiedAtMs = Int(Date().timeIntervalSince1970 * 1000)
                return meta.revision
            } ?? 0
            trace?.record(.metadata(revision: revision), Self.documentID)
            engine.flush(reason: .majorAction)
        }

        // Undo: restore a shape's previous style (a major action).
        if !shapes.isEmpty, rng.chance(0.1 * perSecond) {
            let shape = shapes[Int.random(in: 0 ..< shapes.count, using: &rng)]
            world.mutate(ShapeStyle.self, of: shape) { $0.color ^= 0xFFFFFF }
            engine.flush(reason: .majorAction)
        }

        // A peer's edits arrive over the network: critical, and they advance the vector clock.
        if !syncing, !shapes.isEmpty, rng.chance(0.3 * perSecond) {
            let count = Int.random(in: 1 ... 3, using: &rng)
            for _ in 0 ..< count {
                world.mutate(ShapeStyle.self, of: shapes[Int.random(in: 0 ..< shapes.count, using: &rng)]) { $0.kind = ($0.kind + 1) % 4 }
            }
            for operation in peer.deliver(count, kind: "shape.restyle", using: &rng)
                where engine.receiveOperation(operation) != .duplicate {
                trace?.record(.logged(sequence: operation.seq), operation.node)
            }
        }

        // The viewport pans now and then (UI state, derived); it only ever pans right, so
        // the saved panX says which pans reached the disk.
        if rng.chance(0.5 * perSecond) {
            let panX = world.mutate(Viewport.self, of: viewport) { view -> Float in
                view.panX += 10
                view.zoom = Float.random(in: 0.5 ... 2, using: &rng)
                return view.panX
            }
            if let panX, let id = world.id(of: viewport) { trace?.record(.pan(x: Int(panX)), id) }
        }
    }

    private func spawnShape() {
        let entity = world.spawn(
            ShapeStyle(kind: UInt8.random(in: 0 ... 3, using: &rng), color: UInt32.random(in: 0 ... 0xFFFFFF, using: &rng)),
            ShapeTransform(x: Float.random(in: 0 ... 2000, using: &rng), y: Float.random(in: 0 ... 2000, using: &rng)))
        shapes.append(entity)
        listed.insert(entity)
        if let id = world.id(of: entity) { trace?.record(.spawn, id) }
    }

    private func despawnShape() {
        guard !shapes.isEmpty else { return }
        let i = Int.random(in: 0 ..< shapes.count, using: &rng)
        shapes.swapAt(i, shapes.count - 1)
        let entity = shapes.removeLast()
        listed.remove(entity)
        if drag?.shape == entity { drag = nil }
        guard let id = world.id(of: entity) else { return }
        world.despawn(entity)
        trace?.record(.despawn, id)
    }
}
