import Logging
import Strata

struct Position: Component, Codable {
    static let typeName = "game.position"    // rows are stored under this name: never rename it
    static let tier = Tier.derived           // written on an interval that follows the battery
    var x: Float, y: Float
}

struct Name: Component, Codable {
    static let typeName = "game.name"
    static let tier = Tier.critical          // committed within 1 s, with one fsync
    var text: String
}

var config = StrataConfig()                  // the documented defaults (or StrataConfig.load(path:))
config.database.path = "game.db"
let engine = try Engine.open(config: config, components: [Position.self, Name.self], logger: Logger(label: "game"))
if engine.recovery.crashed { print(engine.recovery) }    // the last session did not shut down cleanly

let player = engine.world.spawn(Position(x: 0, y: 0), Name(text: "player"))
for _ in 0 ..< 600 {                         // your fixed-tick loop
    engine.world.mutate(Position.self, of: player) { $0.x += 1 }
    engine.endTick()                         // hands the tiers that are due to the writer thread
}
try engine.shutdown()                        // the last flush, and the clean-shutdown mark
