import Foundation

/// The TCP ports this process listens on (IPv4; Linux): the socket inodes among its descriptors
/// (`/proc/self/fd`) matched against the `LISTEN` rows of `/proc/net/tcp`. Asks about this
/// process's own sockets, where a connection attempt asks about the port: once a listener closes,
/// a server of a test running in parallel may bind the freed port and accept in its place.
/// Empty when `/proc` cannot be read: pair a "not listening" check with a positive one.
package func listeningPorts() -> Set<Int> {
    let files = FileManager.default
    var sockets = Set<Substring>()
    for descriptor in (try? files.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
        guard let target = try? files.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)"),
            target.hasPrefix("socket:[")
        else { continue }
        sockets.insert(target.dropFirst("socket:[".count).dropLast())
    }
    guard let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8) else { return [] }
    var ports = Set<Int>()
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
    for row in table.split(separator: "\n").dropFirst() {
        let columns = row.split(separator: " ")
        guard columns.count > 9, columns[3] == "0A", sockets.contains(columns[9]),
            let port = columns[1].split(separator: ":").last.flatMap({ Int($0, radix: 16) })
        else { continue }
        ports.insert(port)
    }
    return ports
}
