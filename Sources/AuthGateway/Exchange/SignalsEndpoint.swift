import NIOCore
import NIOHTTP1

/// The Shared Signals receiver's endpoint, `POST {signals.path}` (docs/streams.md): RFC 8935
/// push delivery of Security Event Tokens. Answered before route matching, never forwarded:
/// 202 when the SET is accepted, 400 with the RFC 8935 error document (`{"err", "description"}`)
/// when it is not — nothing is ended then. Calls from outside `signals.trustedPeers` (when set)
/// are refused before their body is read.
struct SignalsEndpoint {
    let receiver: SignalReceiver
    let environment: any ExchangeEnvironment
    let connection: ClientConnectionInfo
    let requestID: String

    /// A SET is a few KiB; anything much larger is not one.
    static let maximumBody = 64 * 1024

    /// The plan for `target` when it is the receiver's path (nil otherwise).
    func plan(_ target: RequestTarget, head: HTTPRequestHead) -> PlanDecision? {
        guard target.path == self.receiver.configuration.path else { return nil }
        guard head.method == .POST else {
            var response = LocalResponse.problem(
                .malformedRequest("The signals endpoint takes POST"), requestID: self.requestID)
            response.headers.add(name: "Allow", value: "POST")
            return .ready(.respond(response, close: false))
        }
        if let peers = self.receiver.configuration.trustedPeers, !Self.peer(self.connection.peerIP, isIn: peers) {
            return .ready(
                .respond(.problem(.forbidden("signals.trustedPeers"), requestID: self.requestID), close: false))
        }
        let (receiver, keys) = (self.receiver, self.environment.keys)
        let endpoint = LocalEndpoint(
            maximumBodyBytes: Self.maximumBody, needsTrailers: false,
            answer: { body, eventLoop in
                receiver.receive(String(buffer: body), keys: keys, on: eventLoop).map {
                    LocalEndpoint.Answer(Self.response($0))
                }
            },
            tooLarge: {
                LocalEndpoint.Answer(
                    Self.response(.refused(SecurityEventRefusal(.invalidRequest, "The SET is larger than accepted"))))
            })
        return .ready(.forward(endpoint.plan(for: head)))
    }

    static func response(_ answer: SignalReceiver.Answer) -> LocalResponse {
        switch answer {
        case .accepted:
            return .text(.accepted, "")
        case .refused(let refusal):
            var response = LocalResponse.json(.badRequest, refusal.json)
            response.error = .malformedRequest(refusal.description)
            return response
        }
    }

    private static func peer(_ address: String, isIn peers: [CIDR]) -> Bool {
        guard let socket = try? SocketAddress(ipAddress: address, port: 0) else { return false }
        return peers.contains { $0.contains(socket) }
    }
}
