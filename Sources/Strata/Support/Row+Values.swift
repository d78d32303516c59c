import GRDB

/// Values of a fetched row, read without a trap.
///
/// GRDB's subscript (`row["x"] as Int`) stops the process on NULL or on a value that does
/// not convert, and a file can hold either: SQLite's columns take any type, and damage or a
/// hand edit puts one there. Every read in the engine is `try row.decode(…)` (a throw: the
/// row is damaged) or ``value(_:as:)`` (nil: the caller says what it does without it);
/// `scripts/check-untrusted-reads.py`, run by `make test`, refuses a subscript. Any thread.
extension Row {
    /// The value in `column`, or nil if it is NULL, absent or does not read as a `T`.
    package func value<T: DatabaseValueConvertible>(_ column: String, as type: T.Type = T.self) -> T? {
        (try? decode(T?.self, forColumn: column)) ?? nil
    }

    /// The value at `index` (a position the query itself selects), or nil if it is NULL or
    /// does not read as a `T`.
    package func value<T: DatabaseValueConvertible>(at index: Int, as type: T.Type = T.self) -> T? {
        (try? decode(T?.self, atIndex: index)) ?? nil
    }
}
