/// The reload's queries, as of a time in the history window (`Store.rebuild(…asOf:)`):
/// without one, the world now.
enum HistoryQueries {
    /// `(num, id)` of every entity, in number order, the spawns that wait for compaction
    /// among them (`layout`: `PendingEntities`). As of `?1`: spawned by then, and either
    /// alive or despawned after it.
    static func entities(asOf: Int64?, layout: PendingEntities.Layout) -> String {
        let waiting = layout.spawnRows(asOf: asOf != nil).map { "UNION ALL \($0) " } ?? ""
        guard asOf != nil else { return "SELECT num, id FROM entities \(waiting)ORDER BY num" }
        return """
            SELECT num, id FROM entities WHERE created_at <= ?1
            UNION ALL
            SELECT num, id FROM despawned_entities WHERE created_at <= ?1 AND despawned_at > ?1
            \(waiting)ORDER BY num
            """
    }

    /// `(entity_num, type_id, version, payload)` base rows, in entity order: with a time,
    /// the despawned entities' kept rows too. The base rows are the window's start (nothing
    /// newer is ever folded into them), so they hold for any time in it.
    static func baseRows(asOf: Int64?) -> String {
        guard asOf != nil else { return "SELECT entity_num, type_id, version, payload FROM components" }
        return """
            SELECT entity_num, type_id, version, payload FROM components
            UNION ALL
            SELECT entity_num, type_id, version, payload FROM despawned_components
            ORDER BY 1, 2
            """
    }
}
