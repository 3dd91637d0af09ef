/// What happened in a simulation that the checks need: what clients sent and were told, where
/// effects would have run, and anything seen out of order while it ran.
struct SimulationHistory {
    struct Emit {
        var token: String
        var node: Int
        /// The seq the client was told its event was ordered at; `nil` before an answer.
        var acknowledged: UInt64?
        var refused: ProtocolError?
    }

    private(set) var emits: [UInt64: Emit] = [:]
    /// For each seq, the (node, session) pairs that would have run its effects.
    private(set) var effects: [UInt64: [(node: Int, session: UInt64)]] = [:]
    /// Problems seen as they happened (an entry applied out of order).
    var violations: [String] = []
    /// Acknowledgements and publications by a coordinator the election service did not name the
    /// leader at that moment.
    var fencing: [String] = []
    /// Entries a replicated leader wrote while its lease did not hold (woken past it, it read a
    /// SUBMIT before its election noticed), by seq: no log may keep them.
    var fencedWrites: [UInt64: Entry] = [:]
    /// Divergences the coordinators alarmed, from the nodes' reported digests.
    var divergences: [String] = []
    var faults: [String] = []
    private(set) var answers = 0
    /// What leaders sent their standbys at each seq, with the epoch that ordered it: a seq holds
    /// one entry per term, even one whose leader's sync failed (it may be in a standby's log).
    private var sent: [UInt64: (epoch: UInt32, record: [UInt8])] = [:]
    /// Seqs a leader sent with another entry than before in the same term.
    private(set) var reusedSeqs: [String] = []

    mutating func noteSent(_ records: [[UInt8]], from firstSeq: UInt64, by leader: String) {
        for (offset, record) in records.enumerated() {
            let seq = firstSeq + UInt64(offset)
            let epoch = Entry.peekEpoch(record) ?? 0
            if let earlier = sent[seq], earlier.epoch == epoch, earlier.record != record, reusedSeqs.count < 5 {
                reusedSeqs.append("\(leader) sent seq \(seq) of epoch \(epoch) to its standbys with another entry than it had sent before")
            }
            sent[seq] = (epoch, record)
        }
    }

    /// The tokens of effect-starting events sent to each address, for cancels to name.
    private(set) var work: [String: [String]] = [:]
    /// The combined digests nodes' reports claimed current (`digestSeq`), by seq, with the nodes
    /// that claimed each: the digest of the log's state at that seq, as monitors read them.
    private(set) var currentDigests: [UInt64: [String: Set<Int>]] = [:]

    mutating func noteCurrentDigest(_ digest: String, at seq: UInt64, from node: Int) {
        currentDigests[seq, default: [:]][digest, default: []].insert(node)
    }

    mutating func noteEmit(request: UInt64, token: String, node: Int, address: String, startsWork: Bool) {
        emits[request] = Emit(token: token, node: node)
        if startsWork { work[address, default: []].append(token) }
    }

    mutating func note(_ reply: ClientReply, from node: Int, at micros: UInt64) {
        answers += 1
        switch reply {
        case .emitted(let request, let seq, _, _):
            guard emits[request] != nil else { return }
            if let earlier = emits[request]?.acknowledged, earlier != seq {
                violations.append("request \(request) was acknowledged at seq \(earlier), then at seq \(seq)")
            }
            emits[request]?.acknowledged = seq
        case .error(let request, let error):
            emits[request]?.refused = error
        default:
            break
        }
    }

    mutating func noteEffects(of entry: Entry, ranOn node: Int, session: UInt64) {
        effects[entry.seq, default: []].append((node, session))
    }
}
