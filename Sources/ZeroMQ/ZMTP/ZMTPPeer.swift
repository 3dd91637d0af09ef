import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ZMTPDriver {
    /// One TCP connection and its protocol state.
    final class Peer {
        let stream: ZMTPStream
        /// The endpoint this side dialed, or `nil` for a connection it accepted.
        let dialer: Dialer?
        var routingID: [UInt8] = []
        var isReady = false
        /// What this peer subscribed to (XPUB and PUB).
        var subscriptions: [[UInt8]] = []
        var lastReceived: ContinuousClock.Instant
        var nextPing: ContinuousClock.Instant?
        var handshakeDeadline: ContinuousClock.Instant?

        init(stream: ZMTPStream, dialer: Dialer?, now: ContinuousClock.Instant) {
            self.stream = stream
            self.dialer = dialer
            self.lastReceived = now
        }
    }

    /// An endpoint given to ``connect(_:)``: dialed again after each disconnect.
    final class Dialer {
        let endpoint: String
        let host: String
        let port: UInt16
        var peer: Peer?
        var retryAt: ContinuousClock.Instant?
        var backoff: Duration

        init(endpoint: String, host: String, port: UInt16, backoff: Duration) {
            self.endpoint = endpoint
            self.host = host
            self.port = port
            self.backoff = backoff
        }
    }
}
