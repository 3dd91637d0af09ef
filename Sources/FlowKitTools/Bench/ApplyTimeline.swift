/// One node's progress as its PROGRESS messages report it: which seq it had applied, and when.
///
/// The apply time of seq `S` on the node is the time of the first report with `applied ≥ S`: the
/// node reports after every batch it applies, so that is when the batch holding `S` was done.
/// A lost report (a ROUTER drops what a full queue cannot take) only makes the answer later, never
/// earlier: the bench errs towards slower.
struct ApplyTimeline: Sendable {
    struct Point: Sendable, Equatable {
        var applied: UInt64
        /// Microseconds since the Unix epoch, the node's clock.
        var time: UInt64
    }

    /// Reports in arrival order, with `applied` strictly increasing.
    private(set) var points: [Point] = []
    /// Points before this index have been trimmed away (kept to avoid shifting on every trim).
    private var start = 0

    /// The node's latest applied seq (0 before its first report).
    var applied: UInt64 { points.last?.applied ?? 0 }

    /// Adds a report; a report that does not advance `applied` is ignored.
    mutating func add(applied: UInt64, time: UInt64) {
        guard applied > self.applied else { return }
        points.append(Point(applied: applied, time: time))
    }

    /// When the node had applied `seq`, or `nil` if it has not yet.
    func time(applying seq: UInt64) -> UInt64? {
        guard let last = points.last, last.applied >= seq else { return nil }
        var low = start
        var high = points.count - 1
        while low < high {
            let middle = (low + high) / 2
            if points[middle].applied >= seq { high = middle } else { low = middle + 1 }
        }
        return points[low].time
    }

    /// Forgets reports older than `time`, keeping the last one, so memory stays bounded on long
    /// runs. An acknowledgement that arrives later than that for an older seq gets a later apply
    /// time than the true one (slower, never faster).
    mutating func trim(before time: UInt64) {
        while start < points.count - 1, points[start].time < time { start += 1 }
        if start > 4_096, start > points.count / 2 {
            points.removeFirst(start - 1)
            start = 1
        }
    }

    /// Forgets everything.
    mutating func reset() {
        points = []
        start = 0
    }
}
