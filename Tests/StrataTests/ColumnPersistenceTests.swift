import Testing
@testable import Strata

/// The replica states persist through their column's hook (``ColumnPersistence``), and no
/// other column has one: every path that persists a column asks the hook, none names the type.
@Suite struct ColumnPersistenceTests {
    @Test func onlyTheReplicaStatesPersistThroughAHook() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let world = engine.world
        let hooked = world.columns.indices.filter { world.persistence(ofColumn: $0) != nil }
        #expect(hooked.map { world.columns[$0].componentType.typeName } == [ReplicaState.typeName])
        #expect(world.persistenceHooks.count == 1)
        #expect(world.persistence(ofColumn: hooked[0]) is ReplicaStatePersistence)
    }
}
