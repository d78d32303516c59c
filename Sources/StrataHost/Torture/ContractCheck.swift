import Foundation
import Strata
import StrataCanvas

/// The durability contract, checked on a document reopened after a fault against the
/// trace of what the canvas did before it (``CriticalTrace``):
///
/// - the crash is counted, and the file passes `PRAGMA integrity_check` and
///   `PRAGMA foreign_key_check` (no component row without its entity);
/// - no shape without the components it was spawned with, no stroke without its points;
/// - every critical change made before `criticalCutoff` is there (spawns, despawns,
///   document revisions, finished strokes, logged operations);
/// - every derived change made before `derivedCutoff` is there (the viewport's pans);
/// - the vector clock the reopened engine holds is the one the log gives (its contiguous
///   prefix per node, rebuilt at open), and the clock the file kept never claims an
///   operation the log does not hold (it may lag: it is derived state).
///
/// It also measures the data at risk: the age, at the fault, of the oldest change of
/// each tier that did not survive.
struct ContractCheck {
    enum Kind: String, CaseIterable, Codable, Sendable {
        case reopen, integrity, orphan, crashNotCounted = "crash_not_counted"
        case criticalLost = "critical_lost", derivedLost = "derived_lost"
        case changesLost = "changes_lost", hang, unexpectedExit = "unexpected_exit", trap
        case vectorClock = "vector_clock"
        // The sync checker (`--mode sync`).
        case diverged, duplicate, missingOperation = "missing_operation", acknowledgedLost = "acknowledged_lost"
        case notSettled = "not_settled"
        /// Through the sync service: an operation recorded as pushed by another subject than
        /// its device's, or by none.
        case wrongPusher = "wrong_pusher"
    }

    struct Failure: Codable, Sendable, CustomStringConvertible {
        var kind: Kind
        var detail: String
        var description: String { "\(kind.rawValue): \(detail)" }
    }

    /// What one check found.
    struct Outcome: Sendable {
        var failures: [Failure] = []
        var checks = 0
        /// The oldest change lost, per tier: its age at the fault.
        var criticalAtRisk: Duration?
        var derivedAtRisk: Duration?

        mutating func fail(_ kind: Kind, _ detail: String) { failures.append(Failure(kind: kind, detail: detail)) }
    }

    let fault: Instant
    let criticalCutoff: Instant
    /// Nil: no derived change had to survive (no WAL sync since the session began).
    let derivedCutoff: Instant?
    let expectedCrashCount: Int
    /// The fault was a crash, and the reopen must count it; nil: either (a shutdown that
    /// could not finish on a full disk is not marked clean).
    var expectCrash: Bool? = true

    func run(_ engine: Engine, trace: [CriticalTrace.Line]) -> Outcome {
        var outcome = Outcome()
        outcome.checks += 1
        if expectCrash == true && (!engine.recovery.crashed || engine.recovery.session.crashCount != expectedCrashCount) {
            outcome.fail(.crashNotCounted, "crashed: \(engine.recovery.crashed), crash count \(engine.recovery.session.crashCount), expected \(expectedCrashCount)")
        }
        if let setAside = engine.recovery.setAsideCorruptFile {
            outcome.fail(.integrity, "set aside as \(setAside): \(engine.recovery.corruption ?? "")")
        }
        outcome.checks += 1
        do {
            let problems = try engine.store.verify()
            if !problems.isEmpty { outcome.fail(.integrity, problems.prefix(3).joined(separator: "; ")) }
        } catch {
            outcome.fail(.integrity, "\(error)")
        }
        checkShapes(engine.world, &outcome)
        checkTrace(engine, trace, &outcome)
        return outcome
    }

    /// No shape lost a component it was spawned with; no stroke its points.
    private func checkShapes(_ world: World, _ outcome: inout Outcome) {
        for (entity, _) in world.entities(with: ShapeStyle.self) {
            outcome.checks += 1
            if world.get(ShapeTransform.self, for: entity) == nil {
                outcome.fail(.orphan, "shape \(world.id(of: entity).map { "\($0)" } ?? "?") has a style and no transform")
            }
        }
        for (entity, _) in world.entities(with: StrokeStyle.self) {
            outcome.checks += 1
            if world.get(StrokePoints.self, for: entity) == nil {
                outcome.fail(.orphan, "stroke \(world.id(of: entity).map { "\($0)" } ?? "?") has a style and no points")
            }
        }
        let documents = world.count(of: DocumentMetadata.self)
        if documents > 1 { outcome.fail(.orphan, "\(documents) documents") }
    }

    private func checkTrace(_ engine: Engine, _ trace: [CriticalTrace.Line], _ outcome: inout Outcome) {
        let world = engine.world
        var operations: [NodeID: OperationLogReader.NodeSummary] = [:]
        if trace.contains(where: { $0.operation == "operation" }) {
            do {
                operations = try OperationLogReader(path: engine.store.location.path).summary()
            } catch {
                outcome.fail(.reopen, "cannot read the operation log: \(error)")
            }
        }
        checkVectorClock(engine, operations, &outcome)
        let despawned = Set(trace.filter { $0.operation == "despawn" }.map(\.subject))
        for (index, line) in trace.enumerated() {
            guard let id = UUID(uuidString: line.subject).map(EntityID.init) else { continue }
            let entity = world.entity(for: id)
            if line.operation != "despawn", entity == nil, despawned.contains(line.subject),
               trace[(index + 1)...].contains(where: { $0.operation == "despawn" && $0.subject == line.subject }) {
                continue   // despawned later: whether this change reached the disk cannot be told
            }
            let present: Bool
            switch line.operation {
            case "spawn":
                present = entity != nil
            case "despawn":
                present = entity == nil
            case "metadata":
                present = (entity.flatMap { world.get(DocumentMetadata.self, for: $0) }?.revision ?? -1) >= Int(line.number ?? 0)
            case "stroke_end":
                present = entity.flatMap { world.get(StrokeStyle.self, for: $0) }?.finished == true
            case "operation":
                guard let sequence = line.number else { continue }
                let node = operations[id]
                present = node.map { summary in
                    sequence <= summary.dropped
                        || (sequence <= summary.highest && !summary.gaps.contains { $0.contains(sequence) })
                } ?? false
            case "pan":
                present = Int(entity.flatMap { world.get(Viewport.self, for: $0) }?.panX ?? -1) >= Int(line.number ?? 0)
            default:
                continue
            }
            outcome.checks += 1
            guard !present else { continue }
            let age = fault.duration(since: line.instant)
            let cutoff = line.isDerived ? derivedCutoff : criticalCutoff
            if line.isDerived {
                outcome.derivedAtRisk = max(outcome.derivedAtRisk ?? .zero, age)
            } else {
                outcome.criticalAtRisk = max(outcome.criticalAtRisk ?? .zero, age)
            }
            if let cutoff, line.instant < cutoff {
                let number = line.number.map { " \($0)" } ?? ""
                outcome.fail(line.isDerived ? .derivedLost : .criticalLost,
                             "\(line.operation) \(line.subject)\(number), \(Self.ms(age)) before the fault")
            }
        }
    }

    /// The reopened engine's clock is the log's contiguous prefix per node; the stored one
    /// is at most that.
    private func checkVectorClock(_ engine: Engine, _ operations: [NodeID: OperationLogReader.NodeSummary], _ outcome: inout Outcome) {
        for (node, summary) in operations {
            outcome.checks += 1
            let contiguous = summary.gaps.first.map { $0.lowerBound - 1 } ?? summary.highest
            let held = engine.vectorClock[node] ?? 0
            if held != contiguous {
                outcome.fail(.vectorClock, "node \(node): the engine holds \(held), the log's contiguous prefix is \(contiguous)")
            }
            if let stored = summary.vectorClock, stored > contiguous {
                outcome.fail(.vectorClock, "node \(node): the file's clock claims \(stored), the log holds through \(contiguous)")
            }
        }
    }

    static func ms(_ duration: Duration) -> String {
        String(format: "%.0f ms", duration.seconds * 1000)
    }
}
