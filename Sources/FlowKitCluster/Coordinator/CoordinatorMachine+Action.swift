import ZeroMQ

extension CoordinatorMachine {
    /// What the machine asks its ``CoordinatorInterpreter`` to carry out.
    enum Action {
        /// Send `frames` to `peer` on the submit socket.
        case reply([[UInt8]], to: RouterEnvelope)
        /// Publish `frames`: ENTRIES carrying `entries` entries, or a control message (0).
        case publish([[UInt8]], entries: Int)
        /// Make the group durable (append and sync), then report with ``committed(_:now:)`` or
        /// ``failed(_:error:now:)``.
        case commit(PendingCommit)
        /// Durable entries, for the coordinator's replica (snapshots and digests).
        case replicate([Entry])
        /// A NODE_REPORT to decode off the ordering path (a thousand digests of JSON take
        /// milliseconds), then hand to ``report(_:now:)``.
        case decodeReport([[UInt8]], from: RouterEnvelope)
        /// Write this set of coordinators eligible to lead to the election service, then report
        /// with ``eligibleWritten(_:now:)`` or ``eligibleWriteFailed()``.
        case proposeEligible(Set<String>)
        /// Stop leading for good and exit: a group the standbys may hold could not be made durable
        /// here (``failed(_:error:now:)``).
        case stepDown(String)
    }
}
