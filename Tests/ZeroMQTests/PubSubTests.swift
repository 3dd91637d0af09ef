import Synchronization
import Testing
import ZeroMQ

@Suite("Publish/subscribe")
struct PubSubTests {
    @Test("subscribers see only their topics (XPUB_VERBOSE tells the publisher they joined)")
    func topicFilters() async throws {
        try await withLoop { _, loop in
            let (publisher, endpoint) = try await loop.open(.xpub) { socket in
                try socket.setOption(.xpubVerbose, true)
                return try socket.bind(anyLoopbackPort)
            }
            let prices = try await loop.open(.sub) { socket in
                try socket.subscribe("prices.")
                try socket.connect(endpoint)
            }
            let news = try await loop.open(.sub) { socket in
                try socket.subscribe("news.")
                try socket.subscribe("alerts")
                try socket.connect(endpoint)
            }

            // Slow joiner: publish only once the publisher has seen all three subscriptions.
            let subscriptions = try await receive(3, from: publisher)
            let topics = Set(subscriptions.map { String(decoding: $0[0].bytes.dropFirst(), as: UTF8.self) })
            #expect(topics == ["prices.", "news.", "alerts"])
            #expect(subscriptions.allSatisfy { $0[0].bytes.first == 1 })

            let published: [Message] = [
                ["prices.eur", "1.08"], ["news.tech", "swift 6"], ["weather", "rain"],
                ["alerts", "fire"], ["prices.usd", "1.00"], ["pricing", "nope"],
            ]
            for message in published { try await publisher.send(message) }

            let pricesGot = try await receive(2, from: prices)
            let newsGot = try await receive(2, from: news)
            #expect(pricesGot == [["prices.eur", "1.08"], ["prices.usd", "1.00"]])
            #expect(newsGot == [["news.tech", "swift 6"], ["alerts", "fire"]])

            // Nothing else arrives: a sentinel on each subscribed topic comes next.
            try await publisher.send(["prices.end", ""])
            try await publisher.send(["news.end", ""])
            #expect(try await receive(1, from: prices) == [["prices.end", ""]])
            #expect(try await receive(1, from: news) == [["news.end", ""]])
        }
    }

    @Test("a plain PUB with a subscriber that retries until the first message arrives")
    func slowJoinerRetry() async throws {
        try await withLoop { _, loop in
            let (publisher, endpoint) = try await loop.open(.pub) { try $0.bind(anyLoopbackPort) }
            let subscriber = try await loop.open(.sub) { socket in
                try socket.subscribe("hello")
                try socket.connect(endpoint)
            }
            // Keep greeting until the subscriber hears one: PUB drops messages sent before
            // the subscription reached it.
            let greeter = Task {
                while !Task.isCancelled {
                    try await publisher.send(["hello", "are you there"])
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
            defer { greeter.cancel() }
            let first = try await receive(1, from: subscriber)
            #expect(first == [["hello", "are you there"]])
        }
    }

    @Test("unsubscribe through perform stops delivery of that topic")
    func unsubscribe() async throws {
        try await withLoop { _, loop in
            let (publisher, endpoint) = try await loop.open(.xpub) { socket in
                try socket.setOption(.xpubVerbose, true)
                return try socket.bind(anyLoopbackPort)
            }
            let subscriber = try await loop.open(.sub) { socket in
                try socket.subscribe("a")
                try socket.subscribe("b")
                try socket.connect(endpoint)
            }
            _ = try await receive(2, from: publisher)
            try await subscriber.perform { try $0.unsubscribe("a") }
            let unsubscribed = try await receive(1, from: publisher)
            #expect(unsubscribed[0][0].bytes == [0] + Array("a".utf8))
            try await publisher.send(["a", "dropped"])
            try await publisher.send(["b", "kept"])
            #expect(try await receive(1, from: subscriber) == [["b", "kept"]])
        }
    }
}
