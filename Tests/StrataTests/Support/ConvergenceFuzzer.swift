import Foundation
import StrataCanvas
@testable import Strata

/// A seeded convergence run, the way CRDT libraries prove theirs: 3–5 replicas (each a
/// real engine on its own file) edit the same entities at random, concurrently and
/// offline; a loopback server carries their operations with partitions, reordering,
/// duplicates and drops; replicas crash (as SIGKILL would leave them) and restart. In one
/// run of three, one replica's clock is 10 minutes ahead (beyond `max_clock_ahead_secs`:
/// the others hold its edits until their clocks get there). Replicas also give a
/// well-known entity (the same id everywhere, as a host's document) a default value.
/// After the network heals and every clock passes the furthest one, every replica's
/// replicated digest must be the same.
struct ConvergenceFuzzer {
    let seed: UInt64
    let rounds: Int
    private var rng: SplitMix64
    private var replicas: [Replica] = []
    private var offline: Set<Int> = []
    private let server = LoopbackServer()
    /// The well-known entity every replica gives a default label (never despawned: a
    /// despawned id never comes back, and a host would not spawn it again).
    static let documentID = EntityID(UUID(uuidString: "00000000-0000-4000-8000-00000000f022") ?? UUID())
    /// What happened, for the failure message.
    private(set) var log: [String] = []

    init(seed: UInt64, rounds: Int) {
        self.seed = seed
        self.rounds = rounds
        rng = SplitMix64(seed: seed)
    }

    /// The result: every replica's replicated digest after healing, and counts of what happened.
    struct Outcome {
        var digests: [String]
        var entities: [Int]
        var crashes = 0
        var deliveries = 0
        /// Whether one replica's clock was 10 minutes ahead.
        var clockAhead = false
        var operations = 0
    }

    mutating func run() throws -> Outcome {
        let count = 3 + Int(rng.next() % 3)
        let ahead = rng.next() % 3 == 0
        for i in 0 ..< count {
            // Clocks up to 2 s apart: "later" differs from device to device.
            let wall = 1_800_000_000_000 + Int64(rng.next() % 2_000) + (ahead && i == 0 ? 600_000 : 0)
            replicas.append(try Replica("fuzz-\(seed)-\(i)", wallStart: wall))
        }
        var outcome = Outcome(digests: [], entities: [])
        outcome.clockAhead = ahead
        for round in 0 ..< rounds {
            let r = Int(rng.next() % UInt64(count))
            let roll = rng.next() % 100
            switch roll {
            case 0 ..< 55: edit(replicas[r], round: round)
            case 55 ..< 68: replicas[r].tick(.milliseconds(Int64(rng.next() % 1_500)))
            case 68 ..< 75:
                _ = replicas[r].engine.flushNow()
                log.append("\(round): \(r) flush")
            case 75 ..< 84:
                if !offline.contains(r) { try server.push(from: replicas[r]) }
            case 84 ..< 93:
                if !offline.contains(r) { outcome.deliveries += deliverSome(to: r) }
            case 93 ..< 96:
                if offline.insert(r).inserted { log.append("\(round): \(r) offline") } else {
                    offline.remove(r)
                    log.append("\(round): \(r) online")
                }
            case 96 ..< 98:
                log.append("\(round): \(r) crash")
                try replicas[r].crash()
                outcome.crashes += 1
            default:
                log.append("\(round): \(r) restart")
                try replicas[r].restart()
            }
        }
        try heal()
        outcome.operations = server.operations.count
        for replica in replicas {
            if ProcessInfo.processInfo.environment["STRATA_FUZZ_DUMP"] != nil {
                let world = replica.world
                var lines: [String] = []
                world.forEach(SharedPosition.self) { e, v in lines.append("\(world.id(of: e)!) pos \(v.x.bitPattern) \(v.y.bitPattern)") }
                world.forEach(SharedLabel.self) { e, v in lines.append("\(world.id(of: e)!) label \(v.text)") }
                print("DUMP \(replica.name) held \(replica.engine.replicationStatus.heldNow)\n" + lines.sorted().joined(separator: "\n"))
            }
            outcome.digests.append(replica.world.digest().replicated)
            outcome.entities.append(replica.world.count(of: SharedPosition.self))
        }
        for replica in replicas { try replica.engine.shutdown() }
        return outcome
    }

    /// Everyone online; every replica flushes and pushes, then receives everything it lacks,
    /// until nothing new is pushed.
    private mutating func heal() throws {
        offline.removeAll()
        log.append("heal")
        for _ in 0 ..< 4 {
            var pushed = 0
            for replica in replicas {
                _ = replica.engine.flushNow()
                pushed += try server.push(from: replica)
            }
            for (i, _) in replicas.enumerated() { _ = deliverSome(to: i, everything: true) }
            // Every clock past the one that ran ahead: what was held as too far ahead is due.
            for replica in replicas { replica.tick(.seconds(900)); replica.tick() }
            if pushed == 0 { break }
        }
        for replica in replicas { _ = replica.engine.flushNow() }
    }

    /// Delivers a random part of the server's operations, shuffled, some twice; or
    /// `everything`, shuffled. One at a time, or in pulled slices.
    private mutating func deliverSome(to r: Int, everything: Bool = false) -> Int {
        let replica = replicas[r]
        var chosen = server.operations.filter { $0.node != replica.engine.nodeID }
        if !everything { chosen = chosen.filter { _ in rng.next() % 3 != 0 } }   // a third dropped (retried later)
        chosen.shuffle(using: &rng)
        if !everything, let again = chosen.randomElement(using: &rng) { chosen.append(again) }   // a duplicate
        if rng.next() % 2 == 0 {
            for operation in chosen { replica.engine.receiveOperation(operation) }
        } else {
            // As the sync client hands them over: slices, whose values are decoded in runs.
            var rest = chosen[...]
            while !rest.isEmpty {
                let slice = rest.prefix(Int(rng.next() % 40) + 1)
                rest = rest.dropFirst(slice.count)
                replica.engine.receiveOperations(Array(slice))
            }
        }
        return chosen.count
    }

    /// A random edit on replica `replica`: spawn, move (floats bit for bit), label,
    /// remove, despawn, often of an entity another replica edits too.
    private mutating func edit(_ replica: Replica, round: Int) {
        let world = replica.world
        let shapes = world.entities(with: SharedPosition.self).map(\.entity)
        let labelled = world.entities(with: SharedLabel.self).map(\.entity)
        let pool = (shapes + labelled).filter { world.id(of: $0) != Self.documentID }
        let roll = rng.next() % 100
        if roll >= 95 {
            // The host's start: its well-known entity gets a default unless it has a value.
            let document = world.entity(for: Self.documentID) ?? world.spawn(id: Self.documentID)
            let filled = world.insertDefault(SharedLabel("default of \(replica.name)"), for: document)
            if rng.next() % 2 == 0 { world.insertDefault(SharedPosition(x: 0, y: 0), for: document) }
            log.append("\(round): \(replica.name) default \(filled)")
            return
        }
        if pool.isEmpty || roll < 15 {
            world.spawn(SharedPosition(x: float(), y: float()), Title("local \(round)"))
            log.append("\(round): \(replica.name) spawn")
            return
        }
        let entity = pool[Int(rng.next() % UInt64(pool.count))]
        switch roll {
        case 15 ..< 60: world.insert(SharedPosition(x: float(), y: float()), for: entity)
        case 60 ..< 78: world.insert(SharedLabel("label \(round)"), for: entity)
        case 78 ..< 86: world.remove(SharedLabel.self, from: entity)
        case 86 ..< 92: world.remove(SharedPosition.self, from: entity)
        case 92 ..< 95: if let document = world.entity(for: Self.documentID) { world.insert(SharedLabel("document \(round)"), for: document) }
        default: world.despawn(entity)
        }
        log.append("\(round): \(replica.name) edit \(roll)")
    }

    /// A float, often one whose bits matter: NaN payloads, −0.0, subnormals, infinities.
    private mutating func float() -> Float {
        switch rng.next() % 8 {
        case 0: Float(bitPattern: 0x7FC0_0000 | UInt32(rng.next() % 0x3F_FFFF) | (rng.next() % 2 == 0 ? 0 : 0x8000_0000))   // NaN payloads, either sign
        case 1: -0.0
        case 2: Float(bitPattern: UInt32(rng.next() % 0x7F_FFFF) | 1)   // a subnormal
        case 3: rng.next() % 2 == 0 ? .infinity : -.infinity
        default: Float(Int64(rng.next() % 20_000) - 10_000) / 7
        }
    }
}
