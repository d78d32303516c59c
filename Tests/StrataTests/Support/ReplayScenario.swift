import Foundation
@testable import Strata

/// What an entity should hold, by the test's own bookkeeping.
struct ExpectedEntity: Equatable {
    var position: Position?
    var title: Title?
    var tags: Tags?

    init(position: Position? = nil, title: Title? = nil, tags: Tags? = nil) {
        self.position = position
        self.title = title
        self.tags = tags
    }

    init(_ world: World, _ entity: Entity) {
        position = world.get(Position.self, for: entity)
        title = world.get(Title.self, for: entity)
        tags = world.get(Tags.self, for: entity)
    }
}

let replayComponents: [any Component.Type] = [Position.self, Title.self, Tags.self, Cursor.self]

/// The world of `engine`, entity by entity.
func snapshot(_ world: World) -> [EntityID: ExpectedEntity] {
    var result: [EntityID: ExpectedEntity] = [:]
    for entity in world.entities { result[world.id(of: entity)!] = ExpectedEntity(world, entity) }
    return result
}
