import Foundation

/// A unit of background work that belongs to an entity of the world (a stroke's thumbnail,
/// a recording's transcription), kept in the document's `jobs` table until it is done:
/// it survives crashes and restarts, and goes with its entity (in the despawn's commit).
public struct Job: Sendable, Equatable, Codable {
    public typealias ID = Int64

    public enum Status: String, Sendable, Codable, CaseIterable {
        /// Waiting for a worker.
        case pending
        /// Claimed by a worker, running. A crash leaves it so; the next open marks it
        /// `failed` ("interrupted"), to run again.
        case processing
        /// Ran and failed (or was interrupted); runs again once ``Job/notBefore`` passes.
        case failed
        /// Failed `max_attempts` times: kept for a person to look at, never run again unless retried.
        case dead
        /// Completed, kept for `keep_finished_secs` (otherwise its row is deleted).
        case done
    }

    public var id: ID
    public var entity: EntityID
    public var kind: String
    public var payload: [UInt8]
    /// Higher runs first; within a priority, oldest first.
    public var priority: Int
    public var status: Status
    /// Runs started so far (a run cut short by a crash counts).
    public var attempts: Int
    public var lastError: String?
    /// Unix milliseconds.
    public var createdAt: Int64
    public var startedAt: Int64?
    public var finishedAt: Int64?
    /// A failed job does not run before this (Unix milliseconds): the backoff.
    public var notBefore: Int64

    public init(id: ID, entity: EntityID, kind: String, payload: [UInt8], priority: Int, status: Status, attempts: Int,
                lastError: String?, createdAt: Int64, startedAt: Int64?, finishedAt: Int64?, notBefore: Int64) {
        self.id = id
        self.entity = entity
        self.kind = kind
        self.payload = payload
        self.priority = priority
        self.status = status
        self.attempts = attempts
        self.lastError = lastError
        self.createdAt = createdAt
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.notBefore = notBefore
    }
}

/// Why a job call failed.
public enum JobError: Error, Equatable, CustomStringConvertible {
    /// The entity is not in the document: never spawned, despawned, or its spawn did not
    /// reach the file in time.
    case unknownEntity(EntityID)
    /// No job with this id (done and deleted, cancelled, or gone with its entity).
    case unknownJob(Job.ID)
    /// A handler saw the cancellation (``JobContext/checkCancellation()``).
    case cancelled

    public var description: String {
        switch self {
        case .unknownEntity(let id): "no entity \(id) in the document"
        case .unknownJob(let id): "no job \(id)"
        case .cancelled: "cancelled"
        }
    }
}
