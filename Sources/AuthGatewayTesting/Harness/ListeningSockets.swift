import Foundation

/// A TCP socket of this process in the `LISTEN` state: its port and its inode, which names this
/// socket alone (a port, once freed, may be bound again by a test running in parallel).
package struct ListeningSocket: Hashable, Sendable {
    package let port: Int
    package let inode: Int
}

/// The TCP sockets a process listens on — this one, or the child `process` (IPv4; Linux): the
/// socket inodes among its descriptors (`/proc/<pid>/fd`) matched against the `LISTEN` rows of
/// `/proc/net/tcp`. Asks about the process's own sockets, where a connection attempt asks about
/// a port: once a listener closes, whoever holds its port next answers there. Empty when `/proc`
/// cannot be read (or the process is gone): pair a "not listening" check with a positive one.
package func listeningSockets(process: Int32? = nil) -> Set<ListeningSocket> {
    let files = FileManager.default
    let descriptors = "/proc/\(process.map(String.init) ?? "self")/fd"
    var inodes = Set<Int>()
    for descriptor in (try? files.contentsOfDirectory(atPath: descriptors)) ?? [] {
        guard let target = try? files.destinationOfSymbolicLink(atPath: "\(descriptors)/\(descriptor)"),
            target.hasPrefix("socket:["), let inode = Int(target.dropFirst("socket:[".count).dropLast())
        else { continue }
        inodes.insert(inode)
    }
    // Read to the end: the file reports size 0 and comes a page per read (`String(contentsOfFile:)`
    // stopped after the first page, ~26 sockets, while the whole suite runs).
    guard let file = FileHandle(forReadingAtPath: "/proc/net/tcp") else { return [] }
    defer { try? file.close() }
    var bytes = Data()
    while let chunk = try? file.read(upToCount: 64 * 1024), !chunk.isEmpty { bytes.append(chunk) }
    var sockets = Set<ListeningSocket>()
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
    for row in String(decoding: bytes, as: UTF8.self).split(separator: "\n").dropFirst() {
        let columns = row.split(separator: " ")
        guard columns.count > 9, columns[3] == "0A", let inode = Int(columns[9]), inodes.contains(inode),
            let port = columns[1].split(separator: ":").last.flatMap({ Int($0, radix: 16) })
        else { continue }
        sockets.insert(ListeningSocket(port: port, inode: inode))
    }
    return sockets
}
