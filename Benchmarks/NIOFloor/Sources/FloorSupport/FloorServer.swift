// What the floor programs share besides their byte scans: their command line, their listener,
// and (the proxy floors) the backend connection each client connection opens.
import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// `PROGRAM PORT TOKEN_FILE`, or `PROGRAM PORT BACKEND_PORT TOKEN_FILE` for the proxy floors.
public struct FloorCommandLine: Sendable {
    public let port: Int
    /// Only for the proxy floors.
    public let backendPort: Int
    /// The bench token, from TOKEN_FILE.
    public let token: String

    /// Parses the process's arguments; prints the usage and exits on anything else.
    public static func parse(program: String, withBackend: Bool) -> FloorCommandLine {
        let arguments = CommandLine.arguments
        let expected = withBackend ? 4 : 3
        guard arguments.count == expected, let port = Int(arguments[1]),
            let backendPort = withBackend ? Int(arguments[2]) : 0,
            let token = try? String(contentsOfFile: arguments[expected - 1], encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)
        else {
            let usage = withBackend ? "PORT BACKEND_PORT TOKEN_FILE" : "PORT TOKEN_FILE"
            FileHandle.standardError.write(Data("usage: \(program) \(usage)\n".utf8))
            exit(2)
        }
        return FloorCommandLine(port: port, backendPort: backendPort, token: token)
    }
}

public enum FloorServer {
    /// Listens on 127.0.0.1:`port` with one event-loop thread (as the benchmarks run the
    /// gateway), each accepted connection served by a new handler from `makeHandler`, until
    /// the process is ended.
    public static func serve<Handler: ChannelHandler>(
        program: String, port: Int, detail: String = "", makeHandler: @escaping @Sendable () -> Handler
    ) throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(makeHandler()) }
            }
            .bind(host: "127.0.0.1", port: port)
            .wait()
        print("\(program) listening on 127.0.0.1:\(port)\(detail)")
        try channel.closeFuture.wait()
    }

    /// Opens a proxy floor's keep-alive connection to the backend at 127.0.0.1:`port`, on the
    /// client connection's own event loop, with a handler from `makeHandler`. The client's
    /// reads wait until it is up; then `connected` gets it (on that loop). If it cannot be
    /// opened, the client connection is closed.
    public static func openBackend<Handler: ChannelHandler>(
        for context: ChannelHandlerContext, port: Int, makeHandler: @escaping @Sendable () -> Handler,
        connected: @escaping @Sendable (Channel) -> Void
    ) {
        let client = context.channel
        client.setOption(.autoRead, value: false).whenSuccess {}
        ClientBootstrap(group: context.eventLoop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(makeHandler()) }
            }
            .connect(host: "127.0.0.1", port: port)
            .hop(to: context.eventLoop)
            .whenComplete { result in
                switch result {
                case .success(let backend):
                    connected(backend)
                    client.setOption(.autoRead, value: true).whenSuccess {}
                case .failure:
                    client.close(promise: nil)
                }
            }
    }
}

extension ByteBuffer {
    /// Appends a read's bytes to what is left unparsed; when nothing is, takes the read's
    /// buffer itself (no copy).
    public mutating func appendRead(_ bytes: inout ByteBuffer) {
        if self.readableBytes == 0 {
            self = bytes
        } else {
            self.writeBuffer(&bytes)
        }
    }
}
