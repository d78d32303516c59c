import Foundation
import Strata

/// The canvas on several devices (`strata sim --sync`): shapes, transforms, styles,
/// strokes and the document's metadata are replicated components, so the engine logs
/// their changes and applies other devices' with no code here (the last writer wins per
/// component; a deletion wins over concurrent edits; ids are never reused). What is left
/// is the canvas's own bookkeeping: its lists of shapes and strokes follow what other
/// devices did (``replicated(_:)``), and a device that stops ends what it had under way.
/// The viewport and peer cursors are each device's own.
extension CanvasScenario {
    /// The document metadata's entity id, the same in every canvas.
    public static let documentID = EntityID(UUID(uuidString: "00000000-0000-4000-8000-00000000d0c5")!)

    /// Another device's change, applied by the engine: the lists follow it.
    func replicated(_ change: ReplicatedChange) {
        switch change.kind {
        case .despawned:
            forget(change.entity)
        case .set:
            guard let entity = world.entity(for: change.entity) else { return }
            if change.typeName == ShapeStyle.typeName, listed.insert(entity) {
                shapes.append(entity)
            } else if change.typeName == StrokeStyle.typeName, world.get(StrokeStyle.self, for: entity)?.finished == true,
                      listed.insert(entity) {
                strokes.append(entity)
            }
        case .spawned, .removed:
            break
        }
    }

    /// The entity with this id is gone (despawned on another device): out of the lists,
    /// and no longer dragged or drawn here.
    private func forget(_ id: EntityID) {
        if let current = drag, world.id(of: current.shape) == nil || world.id(of: current.shape) == id { drag = nil }
        if let current = stroke, world.id(of: current.entity) == nil || world.id(of: current.entity) == id { stroke = nil }
        let gone = shapes.filter { !world.isAlive($0) } + strokes.filter { !world.isAlive($0) }
        guard !gone.isEmpty else { return }
        for entity in gone { listed.remove(entity) }
        shapes.removeAll { !world.isAlive($0) }
        strokes.removeAll { !world.isAlive($0) }
    }

    /// Ends what is under way (a drag, a stroke) and flushes: a device that stops leaves
    /// nothing half done.
    public func finishEdits() {
        drag = nil
        if let current = stroke {
            stroke = nil
            world.mutate(StrokeStyle.self, of: current.entity) { $0.finished = true }
            world.remove(DrawingHere.self, from: current.entity)
            if world.isAlive(current.entity), listed.insert(current.entity) { strokes.append(current.entity) }
        }
        engine.flush(reason: .majorAction)
    }

    /// Another device's operation of a kind the canvas logs itself (none: every edit is
    /// a replicated component). One of an unknown kind stays in the log and syncs on.
    public func apply(_ operation: LoggedOperation) {
        FileHandle.standardError.write(Data("strata sim: operation \(operation.kind) #\(operation.seq) is not the canvas's: kept, not applied\n".utf8))
    }
}
