import CZeroMQ

extension SocketOption where Value == Int32 {
    /// `ZMQ_SNDHWM`: the most messages queued for one peer before sends block (or PUB
    /// drops). `0` means no limit. Default 1000. *Before bind/connect.*
    public static var sendHighWaterMark: Self { Self(rawValue: ZMQ_SNDHWM, name: "ZMQ_SNDHWM") }
    /// `ZMQ_RCVHWM`: the most messages queued from one peer before libzmq stops reading
    /// that connection. `0` means no limit. Default 1000. *Before bind/connect.*
    public static var receiveHighWaterMark: Self { Self(rawValue: ZMQ_RCVHWM, name: "ZMQ_RCVHWM") }
    /// `ZMQ_SNDBUF`: the kernel's send buffer of each connection (`SO_SNDBUF`), in bytes;
    /// `-1` keeps the OS's (on Linux, which then sizes it as the connection needs). *Before bind/connect.*
    public static var sendBufferBytes: Self { Self(rawValue: ZMQ_SNDBUF, name: "ZMQ_SNDBUF") }
    /// `ZMQ_RCVBUF`: the kernel's receive buffer of each connection (`SO_RCVBUF`), in bytes;
    /// `-1` keeps the OS's. *Before bind/connect.*
    public static var receiveBufferBytes: Self { Self(rawValue: ZMQ_RCVBUF, name: "ZMQ_RCVBUF") }
}

extension SocketOption where Value == Int64 {
    /// `ZMQ_MAXMSGSIZE`: the largest inbound message in bytes; a peer that sends a larger
    /// one is disconnected (its message is never delivered). `-1` means no limit (default).
    /// *Before bind/connect.*
    public static var maxMessageSize: Self { Self(rawValue: ZMQ_MAXMSGSIZE, name: "ZMQ_MAXMSGSIZE") }
}

extension SocketOption where Value == Duration {
    /// `ZMQ_LINGER`: how long ``Socket/close(linger:)`` lets unsent messages drain.
    /// `0` discards them; a negative value waits forever (libzmq's default is 30 s for
    /// sockets in a context made with `ZMQ_BLOCKY`). May be set at any time.
    public static var linger: Self { Self(rawValue: ZMQ_LINGER, name: "ZMQ_LINGER") }
    /// `ZMQ_HEARTBEAT_IVL`: how often to send ZMTP PING on each connection; `0` disables
    /// heartbeats (default). *Before bind/connect.*
    public static var heartbeatInterval: Self { Self(rawValue: ZMQ_HEARTBEAT_IVL, name: "ZMQ_HEARTBEAT_IVL") }
    /// `ZMQ_HEARTBEAT_TIMEOUT`: how long to wait for traffic after a PING before the
    /// connection is dropped. Defaults to the heartbeat interval. *Before bind/connect.*
    public static var heartbeatTimeout: Self { Self(rawValue: ZMQ_HEARTBEAT_TIMEOUT, name: "ZMQ_HEARTBEAT_TIMEOUT") }
    /// `ZMQ_HEARTBEAT_TTL`: the time-to-live the peer is asked to apply to this side
    /// (rounded to deciseconds, at most 6553.5 s). *Before bind/connect.*
    public static var heartbeatTTL: Self { Self(rawValue: ZMQ_HEARTBEAT_TTL, name: "ZMQ_HEARTBEAT_TTL") }
    /// `ZMQ_RECONNECT_IVL`: the delay before reconnecting a dropped connection; negative
    /// disables reconnection. Default 100 ms. *Before connect.*
    public static var reconnectInterval: Self { Self(rawValue: ZMQ_RECONNECT_IVL, name: "ZMQ_RECONNECT_IVL") }
    /// `ZMQ_RECONNECT_IVL_MAX`: the cap of the exponential reconnect back-off; `0` keeps
    /// the interval fixed (default). *Before connect.*
    public static var reconnectIntervalMax: Self { Self(rawValue: ZMQ_RECONNECT_IVL_MAX, name: "ZMQ_RECONNECT_IVL_MAX") }
    /// `ZMQ_HANDSHAKE_IVL`: the most time a ZMTP (and CURVE) handshake may take before the
    /// connection is closed; `0` means no limit. Default 30 s. *Before bind/connect.*
    public static var handshakeInterval: Self { Self(rawValue: ZMQ_HANDSHAKE_IVL, name: "ZMQ_HANDSHAKE_IVL") }
    /// `ZMQ_RCVTIMEO`: how long a blocking receive waits before returning `nil`;
    /// negative waits forever (default).
    public static var receiveTimeout: Self { Self(rawValue: ZMQ_RCVTIMEO, name: "ZMQ_RCVTIMEO") }
    /// `ZMQ_SNDTIMEO`: how long a blocking send waits before returning `false`;
    /// negative waits forever (default).
    public static var sendTimeout: Self { Self(rawValue: ZMQ_SNDTIMEO, name: "ZMQ_SNDTIMEO") }
}

extension SocketOption where Value == Bool {
    /// `ZMQ_ROUTER_MANDATORY` (ROUTER, write-only): a message for an unknown routing id
    /// fails with `EHOSTUNREACH` instead of being dropped silently, and a full peer gives
    /// `EAGAIN` instead of a silent drop.
    public static var routerMandatory: Self { Self(rawValue: ZMQ_ROUTER_MANDATORY, name: "ZMQ_ROUTER_MANDATORY") }
    /// `ZMQ_XPUB_NODROP` (XPUB, write-only): at the high-water mark, sends block (or give
    /// `EAGAIN`) instead of dropping messages.
    public static var xpubNoDrop: Self { Self(rawValue: ZMQ_XPUB_NODROP, name: "ZMQ_XPUB_NODROP") }
    /// `ZMQ_XPUB_VERBOSE` (XPUB, write-only): pass every subscription message up, not only
    /// the first for each topic, so the publisher learns of each new subscriber.
    public static var xpubVerbose: Self { Self(rawValue: ZMQ_XPUB_VERBOSE, name: "ZMQ_XPUB_VERBOSE") }
    /// `ZMQ_IMMEDIATE`: queue messages only to completed connections, so sends block (or
    /// fail over to other peers) while a connection is still being made.
    /// *Before connect.*
    public static var immediate: Self { Self(rawValue: ZMQ_IMMEDIATE, name: "ZMQ_IMMEDIATE") }
    /// `ZMQ_CURVE_SERVER`: act as the CURVE server; requires ``curveSecretKey``.
    /// *Before bind/connect.*
    public static var curveServer: Self { Self(rawValue: ZMQ_CURVE_SERVER, name: "ZMQ_CURVE_SERVER") }
    /// `ZMQ_IPV6`: accept and make IPv6 connections as well as IPv4. *Before bind/connect.*
    public static var ipv6: Self { Self(rawValue: ZMQ_IPV6, name: "ZMQ_IPV6") }
}

extension SocketOption where Value == [UInt8] {
    /// `ZMQ_ROUTING_ID`: this socket's identity as seen by a ROUTER peer (1–255 bytes,
    /// must not start with a zero byte). *Before connect.*
    public static var routingID: Self { Self(rawValue: ZMQ_ROUTING_ID, name: "ZMQ_ROUTING_ID") }
    /// `ZMQ_SUBSCRIBE` (SUB, write-only): receive messages whose first frame starts with
    /// this prefix; an empty prefix receives everything. Can be set at any time.
    public static var subscribe: Self { Self(rawValue: ZMQ_SUBSCRIBE, name: "ZMQ_SUBSCRIBE") }
    /// `ZMQ_UNSUBSCRIBE` (SUB, write-only): remove one earlier ``subscribe`` of the same prefix.
    public static var unsubscribe: Self { Self(rawValue: ZMQ_UNSUBSCRIBE, name: "ZMQ_UNSUBSCRIBE") }
}

extension SocketOption where Value == String {
    /// `ZMQ_ZAP_DOMAIN`: the domain passed to the ZAP handler in each authentication
    /// request (see ``ZAPHandler``). *Before bind.*
    public static var zapDomain: Self { Self(rawValue: ZMQ_ZAP_DOMAIN, name: "ZMQ_ZAP_DOMAIN") }
}

extension SocketOption where Value == CurveKey {
    /// `ZMQ_CURVE_PUBLICKEY`: this socket's long-term public key (client side).
    /// *Before connect.*
    public static var curvePublicKey: Self { Self(rawValue: ZMQ_CURVE_PUBLICKEY, name: "ZMQ_CURVE_PUBLICKEY") }
    /// `ZMQ_CURVE_SECRETKEY`: this socket's long-term secret key (client and server).
    /// *Before bind/connect.*
    public static var curveSecretKey: Self { Self(rawValue: ZMQ_CURVE_SECRETKEY, name: "ZMQ_CURVE_SECRETKEY") }
    /// `ZMQ_CURVE_SERVERKEY`: the server's public key; setting it makes this socket a
    /// CURVE client. *Before connect.*
    public static var curveServerKey: Self { Self(rawValue: ZMQ_CURVE_SERVERKEY, name: "ZMQ_CURVE_SERVERKEY") }
}
