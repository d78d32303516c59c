import Foundation
import Strata

/// The canvas's operations as another device applies them (`strata sim --sync`).
///
/// Every operation's payload is its subject's id, then what it set: `shape.create` the
/// style and transform; `shape.move` the transform (logged when a drag ends);
/// `shape.undo` the style; `stroke.end` the pen and the points; `document.edit` the
/// metadata; `shape.delete` and `stroke.delete` nothing more.
///
/// Conflicts: the last writer wins, by ``OperationStamp`` (hybrid timestamp, then node
/// id), per shape transform, per shape style and for the metadata: a device applies an
/// operation only if its stamp is above the one in the entity's ``EditStamps``, so every
/// device ends with the same values whatever order the operations came in. A delete wins
/// over edits made concurrently elsewhere (they arrive for an entity that is gone, and
/// are dropped); ids are never reused, so nothing comes back. Operations of one device
/// reach the others in the server's order, so a shape's creation comes before its edits.
extension CanvasScenario {
    /// The document metadata's entity id, the same in every canvas.
    static let documentID = EntityID(UUID(uuidString: "00000000-0000-4000-8000-00000000d0c5")!)

    func logCreate(_ entity: Entity) {
        let style = world.get(ShapeStyle.self, for: entity)!, transform = world.get(ShapeTransform.self, for: entity)!
        let op = log("shape.create", world.id(of: entity)!) { style.encode(to: &$0); transform.encode(to: &$0) }
        world.insert(EditStamps(transform: OperationStamp(op), style: OperationStamp(op)), for: entity)
    }

    /// A drag ended: where the shape stopped, flushed with its operation (a major action).
    func endDrag(_ shape: Entity) {
        guard let transform = world.get(ShapeTransform.self, for: shape) else { return }
        let op = log("shape.move", world.id(of: shape)!) { transform.encode(to: &$0) }
        world.mutate(EditStamps.self, of: shape) { $0.transform = OperationStamp(op) }
        if syncing { engine.flush(reason: .majorAction) }
    }

    func logStyle(_ shape: Entity) {
        let style = world.get(ShapeStyle.self, for: shape)!
        let op = log("shape.undo", world.id(of: shape)!) { style.encode(to: &$0) }
        world.mutate(EditStamps.self, of: shape) { $0.style = OperationStamp(op) }
    }

    func logStrokeEnd(_ stroke: Entity) {
        let style = world.get(StrokeStyle.self, for: stroke)!, points = world.get(StrokePoints.self, for: stroke) ?? StrokePoints()
        log("stroke.end", world.id(of: stroke)!) { style.encode(to: &$0); points.encode(to: &$0) }
    }

    func logMetadata() {
        let metadata = world.get(DocumentMetadata.self, for: document)!
        let op = log("document.edit", world.id(of: document)!) { metadata.encode(to: &$0) }
        if world.get(EditStamps.self, for: document) == nil { world.insert(EditStamps(), for: document) }
        world.mutate(EditStamps.self, of: document) { $0.style = OperationStamp(op) }
    }

    /// Ends what is under way (a drag, a stroke), so its operation is logged: a device
    /// that stops leaves nothing only it knows.
    public func finishEdits() {
        if let current = drag {
            drag = nil
            endDrag(current.shape)
        }
        if let current = stroke {
            stroke = nil
            world.mutate(StrokeStyle.self, of: current.entity) { $0.finished = true }
            logStrokeEnd(current.entity)
            strokes.append(current.entity)
        }
        engine.flush(reason: .majorAction)
    }

    /// Applies another device's operation (already logged by the engine).
    public func apply(_ operation: LoggedOperation) {
        do {
            try operation.payload.withUnsafeBytes { bytes in
                var p = PayloadReader(bytes)
                let id: EntityID = try p.read()
                try apply(operation, to: id, &p)
            }
        } catch {
            // An operation this build cannot read stays in the log (and syncs on); the world skips it.
            FileHandle.standardError.write(Data("strata sim: operation \(operation.kind) #\(operation.seq) not applied: \(error)\n".utf8))
        }
    }

    private func apply(_ operation: LoggedOperation, to id: EntityID, _ p: inout PayloadReader) throws {
        let stamp = OperationStamp(operation)
        let existing = world.entity(for: id)
        switch operation.kind {
        case "shape.create":
            let style = try ShapeStyle(from: &p, version: 1), transform = try ShapeTransform(from: &p, version: 1)
            guard existing == nil else { return }
            let shape = world.spawn(id: id)
            world.insert(style, for: shape)
            world.insert(transform, for: shape)
            world.insert(EditStamps(transform: stamp, style: stamp), for: shape)
            shapes.append(shape)
        case "shape.move":
            let transform = try ShapeTransform(from: &p, version: 1)
            guard let shape = existing, var stamps = world.get(EditStamps.self, for: shape), stamps.transform < stamp else { return }
            stamps.transform = stamp
            world.insert(transform, for: shape)
            world.insert(stamps, for: shape)
        case "shape.undo":
            let style = try ShapeStyle(from: &p, version: 1)
            guard let shape = existing, var stamps = world.get(EditStamps.self, for: shape), stamps.style < stamp else { return }
            stamps.style = stamp
            world.insert(style, for: shape)
            world.insert(stamps, for: shape)
        case "shape.delete", "stroke.delete":
            guard let entity = existing else { return }
            if drag?.shape == entity { drag = nil }
            if stroke?.entity == entity { stroke = nil }
            shapes.removeAll { $0 == entity }
            strokes.removeAll { $0 == entity }
            world.despawn(entity)
        case "stroke.end":
            let style = try StrokeStyle(from: &p, version: 1), points = try StrokePoints(from: &p, version: 1)
            guard existing == nil else { return }
            let entity = world.spawn(id: id)
            world.insert(style, for: entity)
            world.insert(points, for: entity)
            strokes.append(entity)
        case "document.edit":
            let metadata = try DocumentMetadata(from: &p, version: 1)
            let stamps = world.get(EditStamps.self, for: document) ?? EditStamps()
            guard stamps.style < stamp else { return }
            world.insert(metadata, for: document)
            world.insert(EditStamps(transform: stamps.transform, style: stamp), for: document)
        default:
            return
        }
    }
}
