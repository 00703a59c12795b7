import Foundation

/// Requests this instance admitted for one key of one limit since its last sync.
struct RateLimitUsage: Sendable, Equatable {
    var limit: String
    var key: RateLimitKey
    var requests: Int
}

/// A row another instance wrote: its consumption for one key in one of its syncs.
struct RemoteRateLimitUsage: Sendable, Equatable {
    var instance: UUID
    /// The writer's sync number: increasing per instance, one per sync statement.
    var sequence: Int64
    var limit: String
    var key: RateLimitKey
    var requests: Int
    /// How long ago (database clock) the row was written.
    var ageMilliseconds: Int64
}

/// The pure part of the rate-limit sync across instances (docs/rate-limits.md): numbering this
/// instance's syncs and remembering, per other instance, the last sync already debited, so
/// that a row is debited exactly once however often it is read.
///
/// An instance runs one sync at a time and numbers them 1, 2, 3…; a row is read only when its
/// number is above the reader's watermark for its writer. Each writer's syncs commit in order
/// (the next starts after the previous returned), so watermarks never skip a row.
struct RateLimitSyncState: Sendable {
    let instance: UUID
    /// The last sync number used.
    private(set) var sequence: Int64 = 0
    /// Per other instance: the highest sync number debited.
    private(set) var watermarks: [UUID: Int64] = [:]

    init(instance: UUID) {
        self.instance = instance
    }

    /// The number of the next sync.
    mutating func nextSequence() -> Int64 {
        self.sequence += 1
        return self.sequence
    }

    /// The rows to debit among `rows` read from the database: other instances' rows above
    /// their watermark (again checked here: a statement may run against a stale view), with
    /// the watermarks advanced past them.
    mutating func accept(_ rows: [RemoteRateLimitUsage]) -> [RemoteRateLimitUsage] {
        var fresh: [RemoteRateLimitUsage] = []
        var highest = self.watermarks
        for row in rows where row.instance != self.instance && row.sequence > (self.watermarks[row.instance] ?? 0) {
            fresh.append(row)
            highest[row.instance] = max(highest[row.instance] ?? 0, row.sequence)
        }
        self.watermarks = highest
        return fresh
    }

    /// Usage of one sync, summed per (limit, key): a key drained from several shards or
    /// tables under one name is written once.
    static func merge(_ usage: [RateLimitUsage]) -> [RateLimitUsage] {
        var order: [String: Int] = [:]
        var merged: [RateLimitUsage] = []
        for entry in usage where entry.requests > 0 {
            let id = "\(entry.limit)\u{0}\(entry.key)"
            if let index = order[id] {
                merged[index].requests += entry.requests
            } else {
                order[id] = merged.count
                merged.append(entry)
            }
        }
        return merged
    }
}
