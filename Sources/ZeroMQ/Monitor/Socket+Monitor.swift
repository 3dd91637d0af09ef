import CZeroMQ

extension Socket {
    /// Starts publishing this socket's events on an `inproc://` PAIR endpoint.
    ///
    /// Connect a PAIR socket to `endpoint` and decode each message with
    /// ``MonitorEvent/init(decoding:)``, or use ``AsyncSocket/monitor(events:buffering:)``
    /// which does both on the I/O loop.
    /// - Parameters:
    ///   - endpoint: An `inproc://` endpoint unique in the context.
    ///   - events: The events to report.
    /// - Throws: ``ZMQError`` (`EPROTONOSUPPORT` for a non-inproc endpoint).
    public func startMonitor(endpoint: String, events: MonitorEventMask = .all) throws {
        let socket = try open("zmq_socket_monitor(\(endpoint))")
        try retrying("zmq_socket_monitor(\(endpoint))") { zmq_socket_monitor(socket, endpoint, events.rawValue) }
    }

    /// Stops the monitor started by ``startMonitor(endpoint:events:)``; the monitor
    /// receives ``MonitorEvent/Kind/monitorStopped``.
    public func stopMonitor() throws {
        let socket = try open("zmq_socket_monitor(nil)")
        try retrying("zmq_socket_monitor(nil)") { zmq_socket_monitor(socket, nil, 0) }
    }
}
