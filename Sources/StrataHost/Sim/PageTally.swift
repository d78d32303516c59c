import Strata

/// The pages `strata sim`'s commits write, per document (``PageWrites``), for the
/// summary's pages per commit by table. Tick thread: taken from the engine's counting
/// VFS with each status redraw, so the VFS never holds more than a quarter second's.
final class PageTally {
    private var byPath: [String: PageWrites] = [:]

    /// Starts recording `engine`'s WAL frames (nothing without a counting VFS).
    func watch(_ engine: Engine) {
        engine.countingVFS?.recordPageWrites(true)
    }

    func take(from engine: Engine) {
        guard let vfs = engine.countingVFS else { return }
        byPath[engine.store.location.path, default: PageWrites()].take(from: vfs)
    }

    /// The current document's pages by B-tree (nil without a counting VFS or if the file
    /// cannot be read).
    func byTree(of engine: Engine) -> (pages: PageWrites, trees: [PageWrites.Tree])? {
        guard let pages = byPath[engine.store.location.path], pages.commits > 0,
              let trees = try? pages.byTree(databasePath: engine.store.location.path) else { return nil }
        return (pages, trees)
    }
}
