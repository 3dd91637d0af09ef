#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What one socket pattern does with messages, as libzmq's socket of the same type does: where an
/// outgoing message goes, what the consumer sees of an incoming one, and which subscription events
/// it hands on. ``ZMTPDriver`` owns the connections; a routing only decides.
protocol ZMTPRouting: AnyObject {
    /// Whether queued messages can go anywhere now: a load-balancing pattern waits for a peer past
    /// its handshake and under the high-water mark (libzmq's DEALER blocks the same way); the
    /// others route or drop.
    func canRoute(among peers: [ZMTPDriver.Peer], highWaterMark: Int) -> Bool
    /// A peer finished its handshake, presenting `identity`.
    func ready(_ peer: ZMTPDriver.Peer, identity: [UInt8])
    /// What the consumer sees of a message from `peer`; `nil`: nothing.
    func arriving(_ message: Message, from peer: ZMTPDriver.Peer) -> Message?
    /// A peer subscribed to `prefix` (once per peer and prefix): the event the consumer sees, if any.
    func subscribed(_ prefix: [UInt8]) -> Message?
    /// A peer's subscription to `prefix` ended (cancelled, or the peer left).
    func unsubscribed(_ prefix: [UInt8]) -> Message?
    /// Hands an outgoing message to its peers' sessions.
    func place(_ message: Message, among peers: [ZMTPDriver.Peer], highWaterMark: Int) -> ZMTPPlacement
    /// A connection closed for good.
    func forget(_ peer: ZMTPDriver.Peer)
    /// The connections are all gone (the socket closed).
    func reset()
}

/// What became of an outgoing message.
enum ZMTPPlacement {
    case placed
    /// Dropped; with an error when the user asked to hear of it (ROUTER_MANDATORY).
    case dropped(ZMQError?)
    /// No peer could take it (a load-balancing pattern whose peers all left during the batch).
    case noPeer
}

extension ZMTPRouting {
    func canRoute(among peers: [ZMTPDriver.Peer], highWaterMark: Int) -> Bool { true }
    func ready(_ peer: ZMTPDriver.Peer, identity: [UInt8]) {}
    func arriving(_ message: Message, from peer: ZMTPDriver.Peer) -> Message? { message }
    func subscribed(_ prefix: [UInt8]) -> Message? { nil }
    func unsubscribed(_ prefix: [UInt8]) -> Message? { nil }
    func forget(_ peer: ZMTPDriver.Peer) {}
    func reset() {}

    /// Whether a message's first frame starts with one of `prefixes` (a topic match).
    static func matches(_ message: Message, _ prefixes: [[UInt8]]) -> Bool {
        guard let first = message.first?.bytesView else { return prefixes.contains([]) }
        return prefixes.contains { prefix in first.starts(with: prefix) }
    }
}

/// The routing of a socket type.
func makeRouting(for type: SocketType) -> any ZMTPRouting {
    switch type {
    case .router: RouterRouting()
    case .pub, .xpub: PublishRouting(announcesSubscriptions: type == .xpub)
    case .sub, .xsub: SubscribeRouting(filters: type == .sub)
    default: LoadBalancing(waitsForPeer: type == .dealer || type == .push || type == .pair, canSend: type.canSend)
    }
}

/// DEALER, PUSH, PAIR (and the rest): each message to the next ready peer under the high-water
/// mark, round robin; what arrives is handed on as it is.
final class LoadBalancing: ZMTPRouting {
    private let waitsForPeer: Bool
    private let canSend: Bool
    private var next = 0

    init(waitsForPeer: Bool, canSend: Bool) {
        self.waitsForPeer = waitsForPeer
        self.canSend = canSend
    }

    func canRoute(among peers: [ZMTPDriver.Peer], highWaterMark: Int) -> Bool {
        guard waitsForPeer else { return canSend }
        return peers.contains { $0.isReady && !$0.stream.isClosed && $0.stream.session.queuedMessages < highWaterMark }
    }

    func place(_ message: Message, among peers: [ZMTPDriver.Peer], highWaterMark: Int) -> ZMTPPlacement {
        // The next peer under the high-water mark, else (the batch was taken while one was under
        // it) the next one at all: the mark may be passed by one batch, never by more.
        for respectingMark in [true, false] {
            for offset in 0..<peers.count {
                let peer = peers[(next + offset) % peers.count]
                guard peer.isReady, !peer.stream.isClosed else { continue }
                if respectingMark, peer.stream.session.queuedMessages >= highWaterMark { continue }
                next = (next + offset + 1) % peers.count
                peer.stream.session.send(message)
                return .placed
            }
        }
        return .noPeer
    }
}

/// ROUTER: every peer has a routing id; what arrives carries its sender's id in front, and an
/// outgoing message goes to the peer its first frame names.
final class RouterRouting: ZMTPRouting {
    /// ROUTER_MANDATORY: a message for no peer, or a full one, is reported instead of dropped.
    var mandatory = false
    private var routes: [[UInt8]: ZMTPDriver.Peer] = [:]
    private var nextRoutingID = UInt32.random(in: 0...UInt32.max)

    /// The peer's own identity when it sent one that is free, else a generated one (a zero byte
    /// and a counter, as libzmq makes them). A claimed identity that starts with a zero byte is
    /// not taken: those are the generated ones, and a peer that could claim one could step into
    /// the place of a connection that just closed.
    func ready(_ peer: ZMTPDriver.Peer, identity claimed: [UInt8]) {
        if let first = claimed.first, first != 0, routes[claimed] == nil {
            peer.routingID = claimed
        } else {
            nextRoutingID &+= 1
            let id = nextRoutingID
            peer.routingID = [0, UInt8(id >> 24), UInt8(id >> 16 & 0xFF), UInt8(id >> 8 & 0xFF), UInt8(id & 0xFF)]
        }
        routes[peer.routingID] = peer
    }

    func arriving(_ message: Message, from peer: ZMTPDriver.Peer) -> Message? {
        // One allocation: the frames with the routing id in front.
        var frames: [Frame] = []
        frames.reserveCapacity(message.count + 1)
        frames.append(Frame(peer.routingID))
        frames.append(contentsOf: message)
        return Message(frames: frames)
    }

    func place(_ message: Message, among peers: [ZMTPDriver.Peer], highWaterMark: Int) -> ZMTPPlacement {
        guard message.count >= 1, let peer = routes[message[0].bytes], !peer.stream.isClosed else {
            return .dropped(mandatory ? ZMQError(errno: EHOSTUNREACH, operation: "send(ROUTER)") : nil)
        }
        guard peer.stream.session.queuedMessages < highWaterMark else {
            return .dropped(mandatory ? ZMQError(errno: EAGAIN, operation: "send(ROUTER)") : nil)
        }
        peer.stream.session.send(Message(frames: Array(message.frames.dropFirst())))
        return .placed
    }

    func forget(_ peer: ZMTPDriver.Peer) {
        if !peer.routingID.isEmpty, routes[peer.routingID] === peer { routes[peer.routingID] = nil }
    }

    func reset() {
        routes.removeAll()
    }
}

/// PUB and XPUB: a message goes to every ready peer that subscribed to a prefix of its first
/// frame (a full peer misses it); nothing arrives but subscriptions, which XPUB hands on when a
/// prefix gains its first subscriber or loses its last.
final class PublishRouting: ZMTPRouting {
    private let announcesSubscriptions: Bool
    /// How many peers subscribe to each prefix.
    private var topics: [[UInt8]: Int] = [:]

    init(announcesSubscriptions: Bool) {
        self.announcesSubscriptions = announcesSubscriptions
    }

    func arriving(_ message: Message, from peer: ZMTPDriver.Peer) -> Message? { nil }

    func subscribed(_ prefix: [UInt8]) -> Message? {
        topics[prefix, default: 0] += 1
        return announcesSubscriptions && topics[prefix] == 1 ? Message([1] + prefix) : nil
    }

    func unsubscribed(_ prefix: [UInt8]) -> Message? {
        guard let count = topics[prefix] else { return nil }
        if count > 1 {
            topics[prefix] = count - 1
            return nil
        }
        topics[prefix] = nil
        return announcesSubscriptions ? Message([0] + prefix) : nil
    }

    func place(_ message: Message, among peers: [ZMTPDriver.Peer], highWaterMark: Int) -> ZMTPPlacement {
        for peer in peers where peer.isReady && Self.matches(message, peer.subscriptions) {
            if peer.stream.session.queuedMessages < highWaterMark { peer.stream.session.send(message) }
        }
        return .placed
    }
}

/// SUB and XSUB: the socket's own subscriptions go to every peer; SUB keeps only the messages
/// they match; what XSUB sends is load-balanced.
final class SubscribeRouting: ZMTPRouting {
    private let filters: Bool
    /// The prefixes subscribed to, in order, sent to every peer that connects.
    private(set) var prefixes: [[UInt8]] = []
    private let sending = LoadBalancing(waitsForPeer: false, canSend: true)

    init(filters: Bool) {
        self.filters = filters
    }

    func subscribe(_ prefix: [UInt8]) {
        prefixes.append(prefix)
    }

    /// - Returns: Whether the prefix was subscribed to.
    func unsubscribe(_ prefix: [UInt8]) -> Bool {
        guard let index = prefixes.firstIndex(of: prefix) else { return false }
        prefixes.remove(at: index)
        return true
    }

    func canRoute(among peers: [ZMTPDriver.Peer], highWaterMark: Int) -> Bool { !filters }

    func arriving(_ message: Message, from peer: ZMTPDriver.Peer) -> Message? {
        guard !filters || Self.matches(message, prefixes) else { return nil }
        return message
    }

    func place(_ message: Message, among peers: [ZMTPDriver.Peer], highWaterMark: Int) -> ZMTPPlacement {
        sending.place(message, among: peers, highWaterMark: highWaterMark)
    }
}
