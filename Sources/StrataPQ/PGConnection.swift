import CLibPQ
import Foundation
import Glibc

/// One libpq connection, driven without blocking past a deadline: the connect
/// (`PQconnectStart`/`PQconnectPoll`), the send (`PQsendQueryParams` and `PQflush` in
/// non-blocking mode) and the wait for the result (`PQconsumeInput`/`PQisBusy`) each poll
/// the socket until `timeout` has passed; then the connection is closed, so a dead server
/// never holds the sync thread nor a shutdown.
///
/// Parameters and results travel as text (PostgreSQL's own text forms: arrays as `{…}`,
/// `bytea` as `\x` and hex). Not thread-safe: its owner (the sync transport, a pool's
/// thread in the sync service) calls it one call at a time.
///
/// Errors: ``PGError`` for what the server answered, ``PGConnectionError`` for a connection
/// that could not be made or broke.
public final class PGConnection {
    private var conn: OpaquePointer?
    public let timeout: Duration

    /// Connects to `conninfo` (a `postgresql://` URL or `key=value` pairs).
    public init(conninfo: String, timeout: Duration) throws {
        self.timeout = timeout
        let deadline = Self.deadline(timeout)
        guard let conn = PQconnectStart(conninfo) else { throw PGConnectionError(.unreachable, "libpq could not allocate a connection") }
        self.conn = conn
        // Bad at once: a connection string libpq cannot read (for good), or a socket that
        // refused at once (a server stopped: its Unix socket is gone).
        guard PQstatus(conn) != CONNECTION_BAD else {
            var parseError: UnsafeMutablePointer<CChar>?
            let options = PQconninfoParse(conninfo, &parseError)
            if let parseError { PQfreemem(parseError) }
            if let options { PQconninfoFree(options) }
            throw failure(options == nil ? .misconfigured : .unreachable, "cannot connect")
        }
        var polling = PGRES_POLLING_WRITING
        while polling != PGRES_POLLING_OK {
            switch polling {
            case PGRES_POLLING_FAILED: throw failure(Self.refusal(conn).map { _ in .misconfigured } ?? .unreachable, "cannot connect")
            case PGRES_POLLING_READING: try wait(for: Int16(POLLIN), until: deadline, doing: "connecting")
            default: try wait(for: Int16(POLLOUT), until: deadline, doing: "connecting")
            }
            polling = PQconnectPoll(conn)
        }
        guard PQsetnonblocking(conn, 1) == 0 else { throw failure(.unreachable, "cannot make the connection non-blocking") }
        // The server's NOTICEs ("relation … already exists, skipping") are not the host's
        // output: libpq would print them on standard error.
        PQsetNoticeProcessor(conn, { _, _ in }, nil)
    }

    deinit { close() }

    public func close() {
        if let conn { PQfinish(conn) }
        conn = nil
    }

    public var isOpen: Bool { conn.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// The connection's socket (-1 when closed), for a caller that waits on it.
    public var socket: Int32 { conn.map { PQsocket($0) } ?? -1 }

    /// Reads what the server sent and returns the notifications in it (each one freed).
    /// Throws when the connection is gone (the server closed it, or it broke).
    public func takeNotifications() throws -> [PGNotification] {
        guard let conn else { throw PGConnectionError(.unreachable, "not connected") }
        guard PQconsumeInput(conn) == 1, PQstatus(conn) == CONNECTION_OK else {
            throw failure(.unreachable, "the listening connection failed")
        }
        var notifications: [PGNotification] = []
        while let notification = PQnotifies(conn) {
            notifications.append(PGNotification(channel: String(cString: notification.pointee.relname),
                                                payload: String(cString: notification.pointee.extra)))
            PQfreemem(notification)
        }
        return notifications
    }

    /// Runs `sql` with text parameters (`$1`, `$2`, …; nil is NULL) and returns the rows of
    /// its last result as text (nil for NULL). A server error throws ``PGError``.
    @discardableResult
    public func query(_ sql: String, _ parameters: [String?] = []) throws -> [[String?]] {
        guard let conn else { throw PGConnectionError(.unreachable, "not connected") }
        let deadline = Self.deadline(timeout)
        let sent: Int32 = withCStrings(parameters) { values in
            PQsendQueryParams(conn, sql, Int32(parameters.count), nil, values, nil, nil, 0)
        }
        guard sent == 1 else { throw failure(.unreachable, "cannot send the query") }
        // Non-blocking: push the query out as the socket takes it.
        while true {
            let flushed = PQflush(conn)
            if flushed == 0 { break }
            if flushed < 0 { throw failure(.unreachable, "cannot send the query") }
            try wait(for: Int16(POLLOUT | POLLIN), until: deadline, doing: "sending")
            if PQconsumeInput(conn) == 0 { throw failure(.unreachable, "the connection failed") }
        }
        var rows: [[String?]] = []
        var error: PGError?
        while true {
            while PQisBusy(conn) == 1 {
                try wait(for: Int16(POLLIN), until: deadline, doing: "waiting for the answer")
                if PQconsumeInput(conn) == 0 { throw failure(.unreachable, "the connection failed") }
            }
            guard let result = PQgetResult(conn) else { break }
            defer { PQclear(result) }
            switch PQresultStatus(result) {
            case PGRES_TUPLES_OK:
                rows = Self.rows(of: result)
            case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
                rows = []
            default:
                let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
                let message = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
                    ?? String(cString: PQerrorMessage(conn)).trimmingCharacters(in: .whitespacesAndNewlines)
                error = error ?? PGError(sqlState: state, message: message)
            }
        }
        if let error { throw error }
        guard PQstatus(conn) == CONNECTION_OK else { throw failure(.unreachable, "the connection failed") }
        return rows
    }

    private static func rows(of result: OpaquePointer) -> [[String?]] {
        let count = PQntuples(result), columns = PQnfields(result)
        return (0 ..< count).map { row in
            (0 ..< columns).map { column in
                PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
            }
        }
    }

    /// Polls the socket for `events` until `deadline`; past it the query in flight is
    /// cancelled and the connection closed.
    private func wait(for events: Int16, until deadline: Double, doing what: String) throws {
        guard let conn else { throw PGConnectionError(.unreachable, "not connected") }
        while true {
            let left = deadline - Self.now()
            guard left > 0 else {
                // Closed, not cancelled: libpq 15's PQcancel blocks on a connection of its own
                // (to a server that does not answer, for as long as TCP tries). The server
                // ends the session when it sees the socket closed; a push it still commits is
                // ignored when it comes again (ON CONFLICT DO NOTHING).
                close()
                throw PGConnectionError(.unreachable, "no answer within \(Int(timeout.wholeMilliseconds)) ms (\(what))")
            }
            var descriptor = pollfd(fd: PQsocket(conn), events: events, revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(left * 1000, 1000).rounded(.up)))
            if ready > 0 { return }
            if ready < 0 && errno != EINTR { throw failure(.unreachable, "poll failed") }
        }
    }

    /// What a server that answered said to refuse the connection for good (it will not
    /// change by trying again), or nil for a connection that failed on the way (no server
    /// there, a timeout, a network down): libpq's message for PostgreSQL's FATAL
    /// `invalid_catalog_name` (no such database), `invalid_authorization_specification` and
    /// `invalid_password` (no such role, a refused password, no `pg_hba.conf` entry).
    public static func refusal(_ conn: OpaquePointer) -> String? {
        let message = String(cString: PQerrorMessage(conn))
        // The server's own FATAL, never the way to it ("No such file or directory" is a
        // socket not there: a server stopped, not one that refuses).
        guard message.contains("FATAL:") else { return nil }
        let forGood = ["\" does not exist", "password authentication failed", "no pg_hba.conf entry", "permission denied for database"]
        return forGood.contains(where: message.contains) ? message : nil
    }

    private func failure(_ kind: PGConnectionError.Kind, _ what: String) -> PGConnectionError {
        let detail = conn.map { String(cString: PQerrorMessage($0)).trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
        close()
        return PGConnectionError(kind, detail.isEmpty ? what : "\(what): \(detail)")
    }

    private static func deadline(_ timeout: Duration) -> Double { now() + Double(timeout.wholeMilliseconds) / 1000 }

    private static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// An error the server answered with: its SQLSTATE and message.
public struct PGError: Error, CustomStringConvertible {
    public var sqlState: String
    public var message: String

    public init(sqlState: String, message: String) {
        self.sqlState = sqlState
        self.message = message
    }

    public var description: String { "\(message) (SQLSTATE \(sqlState))" }
}

/// A connection that could not be made, broke or timed out (`.unreachable`), one the
/// server refuses for good (`.misconfigured`: no such database or role, a refused
/// password, a connection string libpq cannot read), or a value the server sent that does
/// not read (`.malformed`).
public struct PGConnectionError: Error, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case unreachable, misconfigured, malformed
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "\(kind.rawValue): \(message)" }
}

/// One `NOTIFY` the server delivered.
public struct PGNotification: Sendable, Equatable {
    public var channel: String
    public var payload: String
}

/// `body` with the strings as C strings (nil for NULL), valid for the call.
private func withCStrings<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies = strings.map { $0.map { strdup($0) } ?? nil }
    defer { for copy in copies { free(copy) } }
    return body(copies.map { $0.map { UnsafePointer($0) } })
}

/// PostgreSQL's text forms for the parameters and results the transport uses.
public enum PGText {
    /// `{a,b,c}` of plain elements (numbers, uuids).
    public static func array<T>(_ values: [T]) -> String { "{" + values.map { "\($0)" }.joined(separator: ",") + "}" }

    /// `{"a","b"}` with `"` and `\` escaped.
    public static func textArray(_ values: [String]) -> String {
        "{" + values.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
            .joined(separator: ",") + "}"
    }

    /// `{"\\x0a0b",…}`: each element bytea's hex form, quoted (its backslash escaped).
    public static func byteaArray(_ values: [[UInt8]]) -> String {
        "{" + values.map { "\"\\\\x" + hex($0) + "\"" }.joined(separator: ",") + "}"
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A `bytea` in its text form (`\x0a0b`).
    public static func bytes(_ text: String) throws -> [UInt8] {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else {
            throw PGConnectionError(.malformed, "a bytea the server sent is not in hex form")
        }
        func value(_ c: UInt8) throws -> UInt8 {
            switch c {
            case UInt8(ascii: "0") ... UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a") ... UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A") ... UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: throw PGConnectionError(.malformed, "a bytea the server sent is not in hex form")
            }
        }
        var out = [UInt8]()
        out.reserveCapacity((utf8.count - 2) / 2)
        var i = 2
        while i < utf8.count {
            out.append(try value(utf8[i]) << 4 | value(utf8[i + 1]))
            i += 2
        }
        return out
    }
}

extension Duration {
    /// The duration in whole milliseconds.
    fileprivate var wholeMilliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
