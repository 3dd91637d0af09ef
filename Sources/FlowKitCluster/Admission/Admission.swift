/// The one rule for what may enter the order, written once and applied at both walls.
///
/// A node applies it to every emit, cancel and effect submission before it submits them; the
/// coordinator applies it again to every submission before ordering it, as the last wall before the
/// log. Both refuse the same things with the same code and message, so a client learns the same
/// reason whichever wall it reaches, and the coordinator is never more lenient than a node.
///
/// The fields it checks, as docs/PROTOCOL.md constrains them, in this order (the payload's shape,
/// the address, then what needs the flow):
/// - `address`: a valid `flow/key` (``Address``) of a registered flow;
/// - kind 1, an event: the codec is one the flow accepts, the payload decodes as the flow's event
///   and is at most ``AdmissionLimits/maxEventBytes``, as sent and in the flow's wire codec;
/// - kind 2, a cancel by id: codec 1, the id's text (1 to 65,535 bytes of UTF-8), or codec 2, its
///   type and text (``CancelTarget``);
/// - kind 3, cancel all: codec 1, no payload;
/// - kind 4 is the coordinator's own (``EntryKind/quarantined``) and is never submitted.
struct Admission: Sendable {
    /// What the rule lets through, in the form it is ordered in.
    struct Admitted: Equatable {
        var kind: EntryKind
        var codec: PayloadCodec
        /// The version of the flow that wrote an event's payload; 0 for a cancel.
        var version: UInt16
        /// The address as text, exactly as it parsed.
        var address: String
        /// Events in the flow's wire codec; a cancel id as UTF-8.
        var payload: [UInt8]
    }

    let registry: FlowRegistry
    let limits: AdmissionLimits

    init(registry: FlowRegistry, limits: AdmissionLimits) {
        self.registry = registry
        self.limits = limits
    }

    /// A client's EMIT or CANCEL, as the node would submit it; `nil` for other requests.
    func admit(_ request: ClientRequest) throws -> Admitted? {
        switch request {
        case .emit(_, _, let codec, let address, let payload):
            try admit(kind: .event, codec: codec, address: address, payload: payload)
        case .cancel(_, _, let address, let id):
            try admit(kind: id == nil ? .cancelAll : .cancel, codec: .json, address: address, payload: Array((id ?? "").utf8))
        case .query, .status, .watch:
            nil
        }
    }

    /// A submission from a SUBMIT, as the coordinator would order it: at the version the node
    /// wrote it in, which this process must be able to read and the live nodes of its flow have
    /// agreed on (checked before the payload is decoded).
    func admit(_ submission: Submission, agreement: VersionAgreement = VersionAgreement(), now: UInt64 = 0) throws -> Admitted {
        try admit(
            kind: submission.kind, codec: submission.codec, version: submission.version, address: submission.address, payload: submission.payload,
            agreement: agreement, now: now
        )
    }

    /// Checks one submission's content.
    ///
    /// - Parameter version: The flow version an event was written in; `nil` for this process's
    ///   own (a node admitting what it submits).
    /// - Returns: The submission as it is to be ordered.
    /// - Throws: ``ProtocolError`` naming the first rule it breaks.
    func admit(
        kind: EntryKind, codec: PayloadCodec, version: UInt16? = nil, address: String, payload: [UInt8],
        agreement: VersionAgreement = VersionAgreement(), now: UInt64 = 0
    ) throws -> Admitted {
        // The payload's shape first, then the address, then what needs the flow: the order a node
        // meets them in, as its decoder checks a CANCEL's id before the rule sees the address.
        switch kind {
        case .event:
            try limits.checkEventSize(payload.count)
        case .cancel:
            _ = try CancelTarget(codec: codec, payload: payload)
        case .cancelAll:
            guard codec == .json else {
                throw ProtocolError(.unsupportedCodec, "a cancel of every effect (kind 3) carries codec 1 (JSON); got \(codec.rawValue)")
            }
            try CancelPayload.checkCancelAll(payload)
        case .quarantined:
            throw ProtocolError(.malformed, "entry kind 4 marks an entry the coordinator quarantined; it cannot be submitted")
        case .takeover:
            throw ProtocolError(.malformed, "entry kind 5 moves effects off a node that went down; only the coordinator orders it")
        }
        let flow = try self.flow(at: address)
        guard kind == .event else { return Admitted(kind: kind, codec: codec, version: 0, address: address, payload: payload) }
        let written = version ?? flow.version
        guard written >= 1 else { throw ProtocolError(.malformed, "an event carries its flow's version, 1 or more; got 0") }
        guard (flow.oldestReadable...flow.version).contains(written) else {
            throw ProtocolError.versionUnreadable(flow: flow.name, version: written, reads: flow.oldestReadable...flow.version)
        }
        try agreement.check(flow: flow.name, version: written, now: now)
        // An older version's event is checked through the migrations and ordered as it was written.
        let normalised = written == flow.version ? try flow.normalise(payload, codec: codec) : try flow.check(payload, codec: codec, version: written)
        try limits.checkEventSize(normalised.count)
        return Admitted(kind: kind, codec: written == flow.version ? flow.wireCodec : codec, version: written, address: address, payload: normalised)
    }

    /// The registered flow of a valid address. A plainly valid one is checked in place and its
    /// flow found by name; anything else is parsed in full, which words the error.
    private func flow(at address: String) throws -> any RegisteredFlow {
        if let name = Address.plainFlowName(of: address), let flow = registry.flow(named: String(name)) { return flow }
        return try registry.flow(for: try Address(parsing: address))
    }
}
