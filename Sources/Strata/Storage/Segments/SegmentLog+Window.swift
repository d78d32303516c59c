/// The segment rows by time, for `[history]`: compaction consumes only the rows older than
/// the window (or, past the window's size cap, the oldest anyway). Writer thread.
extension SegmentLog {
    struct RowTime: Equatable {
        var id: Int64
        var createdAt: Int64
        var bytes: Int
    }

    /// A row was added (an append, a merge's output, the reload), in id order.
    func noteRowTime(id: Int64, createdAt: Int64, bytes: Int) {
        let row = RowTime(id: id, createdAt: createdAt, bytes: bytes)
        if let last = rowTimes.last, last.id > id {
            // A merge's output, under the seq of the rows it consumed: before the rest.
            let index = rowTimes.firstIndex { $0.id > id } ?? rowTimes.count
            rowTimes.insert(row, at: index)
        } else {
            rowTimes.append(row)
        }
    }

    /// Rows with ids up to `id` were consumed.
    func forgetRowTimes(through id: Int64) {
        let consumed = rowTimes.prefix { $0.id <= id }.count
        rowTimes.removeFirst(consumed)
    }

    /// Row `id` left the log on its own (set aside as unreadable).
    func forgetRowTime(id: Int64) {
        rowTimes.removeAll { $0.id == id }
    }

    /// What compaction may consume under a history window that starts at `cutoff` (Unix
    /// ms) and holds at most `maxBytes`: the rows older than the cutoff, then the oldest
    /// others while the rest is over the cap. Returns the last such row's id and their bytes
    /// (nil and 0: nothing may go).
    func outsideWindow(cutoff: Int64, maxBytes: Int) -> (endID: Int64?, bytes: Int) {
        var remaining = bytes   // the rows' bytes, counted as they come and go
        var endID: Int64?
        var bytes = 0
        for row in rowTimes {
            guard row.createdAt < cutoff || remaining > maxBytes else { break }
            endID = row.id
            bytes += row.bytes
            remaining -= row.bytes
        }
        return (endID, bytes)
    }
}
