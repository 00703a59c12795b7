import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A 127.0.0.1 port that refuses connections for as long as this object lives: a bound TCP
/// socket that never listens, so a connect gets a reset — and, unlike the port of a closed
/// server, no test running in parallel can bind it in the meantime and answer instead.
///
/// `shareable`: the socket has `SO_REUSEADDR`, so a server with `SO_REUSEADDR` (the test
/// servers) can bind and listen on the same port while this one still holds it — Linux lets
/// sockets that all set it share a port that nobody listens on — and the port turns from
/// refusing to serving without a moment when it is free for anyone else.
package final class RefusingPort: Sendable {
    package let port: Int
    private let descriptor: NIOLockedValueBox<Int32?>

    package init(shareable: Bool = false) throws {
        #if canImport(Glibc) || canImport(Musl)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw ProcessHarnessError(description: "socket() failed: errno \(errno)") }
        if shareable {
            var one: Int32 = 1
            guard setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) == 0
            else {
                Self.closeDescriptor(descriptor)
                throw ProcessHarnessError(description: "setsockopt(SO_REUSEADDR) failed: errno \(errno)")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(descriptor, generic, length) == 0 && getsockname(descriptor, generic, &length) == 0
            }
        }
        guard bound else {
            Self.closeDescriptor(descriptor)
            throw ProcessHarnessError(description: "bind() failed: errno \(errno)")
        }
        self.descriptor = NIOLockedValueBox(descriptor)
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    package var url: String { "http://127.0.0.1:\(self.port)" }

    /// Releases the port now (else when this object goes).
    package func close() {
        if let descriptor = self.descriptor.withLockedValue({ descriptor in
            defer { descriptor = nil }; return descriptor
        }) {
            Self.closeDescriptor(descriptor)
        }
    }

    private static func closeDescriptor(_ descriptor: Int32) {
        #if canImport(Glibc)
        _ = Glibc.close(descriptor)
        #elseif canImport(Musl)
        _ = Musl.close(descriptor)
        #else
        _ = Darwin.close(descriptor)
        #endif
    }

    deinit { self.close() }
}
