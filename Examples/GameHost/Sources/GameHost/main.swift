// A fixed-tick game loop that keeps its world in a Strata document.
//
//     swift run GameHost [PATH] [--ticks N]
//
// The first run creates PATH (default: game.db in the working directory) and a world; every
// later run reloads it, says what it found, and plays on from there. Without a config.toml in
// the working directory it uses the defaults (`StrataConfig()`, the documented defaults).

import Foundation
import Logging
import Strata

/// Hand-written payload: the hot type, changed every tick.
struct Transform: Component {
    static let typeName = "game.transform"      // rows are stored under this name: never rename it
    static let tier = Tier.derived              // written on the battery-adaptive interval
    var x: Float, y: Float

    init(x: Float, y: Float) { self.x = x; self.y = y }
    func encode(to payload: inout PayloadWriter) { payload.write(x); payload.write(y) }
    init(from payload: inout PayloadReader, version: Int) throws { x = try payload.read(); y = try payload.read() }
}

/// `Codable`: no payload code (the same compact binary form, a little slower to encode).
struct Inventory: Component, Codable {
    static let typeName = "game.inventory"
    static let tier = Tier.critical             // committed within 1 s, synchronous=FULL
    var items: [String: Int]
    var equipped: String?
}

/// Not persisted: meaningless after a restart.
struct Velocity: Component {
    static let typeName = "game.velocity"
    static let tier = Tier.ephemeral
    var dx: Float, dy: Float

    init(dx: Float, dy: Float) { self.dx = dx; self.dy = dy }
    func encode(to payload: inout PayloadWriter) { payload.write(dx); payload.write(dy) }
    init(from payload: inout PayloadReader, version: Int) throws { dx = try payload.read(); dy = try payload.read() }
}

var arguments = Array(CommandLine.arguments.dropFirst())
var ticks = 120
if let flag = arguments.firstIndex(of: "--ticks"), flag + 1 < arguments.count, let count = Int(arguments[flag + 1]) {
    ticks = count
    arguments.removeSubrange(flag ... flag + 1)
}

var config = FileManager.default.fileExists(atPath: "config.toml")
    ? try StrataConfig.load(path: "config.toml")     // a bad value throws a ConfigError naming the key
    : StrataConfig()                                  // the documented defaults
config.database.path = arguments.first ?? "game.db"
config.simulation.tickHz = 60                         // this loop's rate: the engine flushes a tick ahead of a deadline

var logger = Logger(label: "game")
logger.logLevel = .notice
let engine = try Engine.open(config: config, components: [Transform.self, Inventory.self, Velocity.self], logger: logger)
if engine.recovery.crashed { print("the last session did not shut down cleanly: \(engine.recovery)") }

let world = engine.world
let player: Entity
if let found = world.entities(with: Inventory.self).first {
    player = found.entity
    let at = world.get(Transform.self, for: player)!
    print("reloaded \(world.entityCount) entities; player at x=\(at.x), holding \(world.get(Inventory.self, for: player)!.items)")
} else {
    player = world.spawn(Transform(x: 0, y: 0), Inventory(items: ["arrow": 10], equipped: nil))   // persisted together
    for index in 0 ..< 10 { world.spawn(Transform(x: Float(index), y: 0)) }
    print("new world: \(world.entityCount) entities")
}
world.insert(Velocity(dx: 1, dy: 0), for: player)

// The loop: simulate, mark what changed, hand due tiers to the writer; never waits on SQLite.
// The engine and its world belong to this thread: the loop sleeps on it (an `await` could
// resume on another thread, which the engine refuses in debug builds).
let tick = 1.0 / Double(config.simulation.tickHz)
for number in 0 ..< ticks {
    let velocity = world.get(Velocity.self, for: player)!
    world.mutate(Transform.self, of: player) { $0.x += velocity.dx }
    if number == ticks / 2 {
        world.mutate(Inventory.self, of: player) { $0.items["arrow", default: 0] -= 1; $0.equipped = "bow" }
        engine.flush(reason: .majorAction)            // a savepoint: every tier within 1 s
    }
    engine.noteInput()                                // a player is at the keys: not idle
    engine.endTick()
    Thread.sleep(forTimeInterval: tick)
}

guard engine.flushNow() else {                        // an explicit save: waits for the commit
    print("the save did not commit (see the warning above); the shutdown tries again")
    exit(1)
}
let metrics = engine.metrics
try engine.shutdown()                                 // final flush, clean mark, WAL truncated
print("saved: player at x=\(world.get(Transform.self, for: player)!.x), \(metrics.vfs?.syncs ?? 0) sync requests this session")
