/// Document switching: an app with several documents moves between them without
/// restarting the process. Tick thread.
extension Engine {
    /// Closes this document and opens the one at `path` in its place, returning the engine
    /// that now owns the world: use it (and its `world`) from here on.
    ///
    /// In order: every tier of this document is flushed and checkpointed (reason
    /// ``FlushReason/documentSwitch``), waiting at most `timeout`; the other document is
    /// opened with the same configuration, component types and options, and its world
    /// rebuilt; then this one shuts down cleanly (its clean-shutdown mark, WAL truncated,
    /// its owner lock released), and the power and memory monitors move to the new engine.
    /// Each document keeps its own session marks and counters.
    ///
    /// - Throws: if the flush does not finish in time, or the other document cannot be
    ///   opened (owned by someone else, a newer schema…). This engine is then still open
    ///   and nothing is lost.
    public func switchDocument(to path: String, timeout: Duration = .seconds(30)) throws -> Engine {
        owner.check("Engine")
        precondition(!isShutDown, "switchDocument(to:) on an engine that was shut down")
        guard flushNow(reason: .documentSwitch, timeout: timeout) else {
            throw StoreError(.write, message: "the flush before a document switch did not finish within \(timeout)", path: store.location.path)
        }
        var next = config
        next.database.path = path
        let engine = try Engine.open(config: next, components: world.componentTypes, logger: logger, options: options)
        let monitors = (power: powerMonitor, memory: memoryMonitor)
        powerMonitor = nil   // not stopped by this shutdown: they go on with the next engine
        memoryMonitor = nil
        do {
            try shutdown()
        } catch {
            // Every change is committed (the flush above); only the clean mark may be missing,
            // and the document's next open then reports a crash, as it should.
            logger.error("document switch: \(store.location.path) did not shut down cleanly: \(error)")
        }
        if let power = monitors.power { engine.attach(power) }
        if let memory = monitors.memory { engine.attach(memory) }
        return engine
    }
}
