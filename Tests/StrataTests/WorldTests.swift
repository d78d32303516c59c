import Testing
@testable import Strata
import StrataTesting

@Suite struct WorldTests {
    let clock = ManualClock()

    @Test func spawnInsertGetMutateRemove() {
        let world = World(clock: clock)
        let e = world.spawn(Position(x: 1, y: 2))
        #expect(world.isAlive(e))
        #expect(world.get(Position.self, for: e) == Position(x: 1, y: 2))
        #expect(world.get(Title.self, for: e) == nil)

        world.insert(Title("a"), for: e)
        world.insert(Title("b"), for: e)   // replace
        #expect(world.get(Title.self, for: e) == Title("b"))

        let newX = world.mutate(Position.self, of: e) { p -> Float in p.x += 10; return p.x }
        #expect(newX == 11)
        #expect(world.get(Position.self, for: e)?.x == 11)

        #expect(world.remove(Title.self, from: e) == Title("b"))
        #expect(world.get(Title.self, for: e) == nil)
        #expect(world.remove(Title.self, from: e) == nil)
        #expect(world.mutate(Title.self, of: e) { _ in } == nil)
    }

    @Test func despawnedHandlesResolveToNothingEvenWhenTheSlotIsReused() {
        let world = World(clock: clock)
        let a = world.spawn(Position(x: 1, y: 1))
        let idA = world.id(of: a)!
        #expect(world.despawn(a))
        #expect(!world.despawn(a))
        let b = world.spawn(Position(x: 2, y: 2))
        #expect(b.index == a.index)            // slot reused…
        #expect(b.generation != a.generation)  // …under a new generation
        #expect(world.get(Position.self, for: a) == nil)
        #expect(!world.insert(Title("x"), for: a))
        #expect(world.entity(for: idA) == nil)
        #expect(world.get(Position.self, for: b) == Position(x: 2, y: 2))
        #expect(world.entityCount == 1)
    }

    @Test func iterationVisitsExactlyTheEntitiesWithTheType() {
        let world = World(clock: clock)
        let a = world.spawn(Position(x: 1, y: 0))
        _ = world.spawn(Title("no position"))
        let c = world.spawn(Position(x: 3, y: 0), Title("both"))
        world.despawn(a)
        let visited = world.entities(with: Position.self)
        #expect(visited.map(\.entity) == [c])
        #expect(visited.map(\.value.x) == [3])
        #expect(world.count(of: Position.self) == 1)
        #expect(world.count(of: Title.self) == 2)
    }

    @Test func stableIdsMapBothWays() {
        let world = World(clock: clock)
        let id = EntityID()
        let e = world.spawn(id: id)
        #expect(world.id(of: e) == id)
        #expect(world.entity(for: id) == e)
    }

    @Test func repeatedChangesOfOneKeyQueueItOnce() {
        let world = World(clock: clock)
        let e = world.spawn(Position(x: 0, y: 0))
        let batch = WriteBatch()
        world.drain(.critical, into: batch)      // the spawn
        for i in 0 ..< 300 { world.mutate(Position.self, of: e) { $0.x = Float(i) } }
        #expect(world.pendingCount(.derived) == 1)
        let derived = WriteBatch()
        world.drain(.derived, into: derived)
        #expect(derived.writes.count == 1)
        #expect((derived.writes[0].value as? Position)?.x == 299)
    }

    @Test func setIfChangedSkipsEqualValues() {
        let world = World(clock: clock)
        let e = world.spawn(Position(x: 1, y: 1))
        let batch = WriteBatch()
        world.drain(.critical, into: batch)
        #expect(!world.setIfChanged(Position(x: 1, y: 1), for: e))
        #expect(world.pendingCount(.derived) == 0)
        #expect(world.firstPendingChange(.derived) == nil)
        #expect(world.setIfChanged(Position(x: 2, y: 1), for: e))
        #expect(world.pendingCount(.derived) == 1)
    }

    @Test func changesRouteToTheirTierAndEphemeralIsNeverQueued() {
        let world = World(clock: clock)
        let e = world.spawn()
        let spawn = WriteBatch()
        world.drain(.critical, into: spawn)
        world.insert(Position(x: 1, y: 1), for: e)
        world.insert(Title("t"), for: e)
        world.insert(Cursor(x: 1), for: e)
        #expect(world.pendingCount(.critical) == 1)
        #expect(world.pendingCount(.derived) == 1)
        #expect(world.pendingCount(.ephemeral) == 0)
        let critical = WriteBatch()
        world.drain(.critical, into: critical)
        #expect(critical.writes.map(\.typeName) == [Title.typeName])
        #expect(critical.durability == .full)
        let derived = WriteBatch()
        world.drain(.derived, into: derived)
        #expect(derived.writes.map(\.typeName) == [Position.typeName])
        #expect(derived.durability == .normal)
    }

    /// A critical drain reads spawns, despawns and settings only when the tracker says
    /// some were queued (`criticalExtras`): each kind queued after a drain of keys alone
    /// is in the next drain, and nothing is left behind.
    @Test func everyKindOfCriticalWorkQueuedAfterAKeysOnlyDrainIsInTheNextDrain() {
        let world = World(clock: clock)
        let e = world.spawn(Title("a"))
        world.drain(.critical, into: WriteBatch())   // the spawn
        world.insert(Title("b"), for: e)
        #expect(!world.tracker.criticalExtras, "a component key is not extra work")
        let keys = WriteBatch()
        world.drain(.critical, into: keys)
        #expect(keys.writes.count == 1 && keys.entityInserts.isEmpty && keys.settingWrites.isEmpty && keys.durability == .full)

        world.setSetting(.integer(1), for: "k")
        #expect(world.tracker.criticalExtras)
        let settings = WriteBatch()
        world.drain(.critical, into: settings)
        #expect(settings.settingWrites == [SettingWrite(key: "k", value: .integer(1))] && settings.durability == .full)
        #expect(!world.tracker.criticalExtras)

        let f = world.spawn(Title("c"))
        let spawn = WriteBatch()
        world.drain(.critical, into: spawn)
        #expect(spawn.entityInserts.map(\.id) == [world.id(of: f)!])
        #expect(spawn.writes.map(\.typeName) == [Title.typeName])

        world.despawn(f)
        let despawn = WriteBatch()
        world.drain(.critical, into: despawn)
        #expect(despawn.entityDeletes == [spawn.entityInserts[0].number])
        #expect(!world.tracker.criticalExtras && world.tracker.firstCritical == nil)
        let empty = WriteBatch()
        world.drain(.critical, into: empty)
        #expect(empty.isEmpty)
    }

    @Test func componentsSetBeforeTheSpawnIsDrainedTravelWithTheSpawn() {
        let world = World(clock: clock)
        let e = world.spawn(Position(x: 1, y: 1), Title("t"))
        world.mutate(Position.self, of: e) { $0.x = 5 }
        #expect(world.pendingCount(.derived) == 0)
        let derived = WriteBatch()
        world.drain(.derived, into: derived)
        #expect(derived.isEmpty)
        let critical = WriteBatch()
        world.drain(.critical, into: critical)
        #expect(critical.entityInserts.map(\.id) == [world.id(of: e)!])
        #expect(Set(critical.writes.map(\.typeName)) == [Position.typeName, Title.typeName])
        #expect((critical.writes.first { $0.typeName == Position.typeName }?.value as? Position)?.x == 5)
    }

    @Test func despawnDropsPendingWritesAndCancelsAnUnsavedSpawn() {
        let world = World(clock: clock)
        let saved = world.spawn(Position(x: 1, y: 1))
        let batch = WriteBatch()
        world.drain(.critical, into: batch)
        world.mutate(Position.self, of: saved) { $0.x = 9 }
        let unsaved = world.spawn(Title("never saved"))
        world.despawn(saved)
        world.despawn(unsaved)
        let critical = WriteBatch()
        world.drain(.critical, into: critical)
        let derived = WriteBatch()
        world.drain(.derived, into: derived)
        #expect(critical.entityDeletes.count == 1)
        #expect(critical.entityInserts.isEmpty)
        #expect(critical.writes.isEmpty && derived.writes.isEmpty)
    }

    @Test func aStaleKeyOfAReusedSlotWaitsForTheNewSpawn() {
        let world = World(clock: clock)
        let old = world.spawn(Position(x: 1, y: 1))
        let batch = WriteBatch()
        world.drain(.critical, into: batch)
        world.mutate(Position.self, of: old) { $0.x = 2 }  // derived key for the slot
        let oldNumber = world.records[Int(old.index)].number
        world.despawn(old)
        let new = world.spawn(Position(x: 7, y: 7))         // same slot, spawn pending
        #expect(new.index == old.index)
        let derived = WriteBatch()
        world.drain(.derived, into: derived)
        #expect(derived.writes.isEmpty, "the new entity's row must not precede its entity row")
        let critical = WriteBatch()
        world.drain(.critical, into: critical)
        #expect(critical.entityInserts.map(\.id) == [world.id(of: new)!])
        #expect(critical.entityInserts[0].number > oldNumber, "a reused slot gets a new number: the old one's records must not apply")
        #expect((critical.writes.first?.value as? Position) == Position(x: 7, y: 7))
    }

    @Test func firstPendingChangeIsTheFirstChangeOfTheTier() {
        let world = World(clock: clock)
        let e = world.spawn()
        let batch = WriteBatch()
        world.drain(.critical, into: batch)
        #expect(world.firstPendingChange(.derived) == nil)
        let t0 = clock.now()
        world.insert(Position(x: 0, y: 0), for: e)
        clock.advance(by: .seconds(3))
        world.insert(Position(x: 1, y: 0), for: e)
        #expect(world.firstPendingChange(.derived) == t0)
    }
}
