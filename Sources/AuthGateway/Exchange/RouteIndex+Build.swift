/// Building the index: once per configuration (start-up, reload, `check --request`), in time
/// about linear in the routes' path bytes (a sort of each tree's paths aside), never quadratic
/// in the number of routes.
extension RouteIndex {
    /// The index of `routes`, in configuration order.
    init(_ routes: [RouteConfiguration]) {
        var methods: [Int32] = []
        methods.reserveCapacity(routes.count)
        var anyHost = TreePaths()
        var hosts: [[UInt8]: TreePaths] = [:]
        var hostOrder: [[UInt8]] = []
        for (position, route) in routes.enumerated() {
            let index = Int32(position)
            if let set = route.methods {
                methods.append(Int32(self.methodSets.count))
                self.methodSets.append(set)
            } else {
                methods.append(-1)
            }
            guard let host = route.host else {
                anyHost.add(route.pathMatch, route: index)
                continue
            }
            self.firstHostRoute = min(self.firstHostRoute, index)
            let key = host.utf8.map(ASCII.lower)
            if hosts[key] == nil { hostOrder.append(key) }
            hosts[key, default: TreePaths()].add(route.pathMatch, route: index)
        }
        if !anyHost.paths.isEmpty { self.anyHostRoot = self.addTree(anyHost, methods: methods) }
        self.hosts = RouteHostTable(capacity: hostOrder.count)
        for host in hostOrder { self.hosts.add(host, root: self.addTree(hosts[host]!, methods: methods)) }
    }

    /// Adds the radix tree of `tree`'s paths; returns its root.
    ///
    /// Iterative, not recursive: a tree is as deep as its longest path, and a reload may run on
    /// a thread with a small stack.
    private mutating func addTree(_ tree: TreePaths, methods: [Int32]) -> Int32 {
        // Sorted, the paths under a node are a contiguous run, the node's own path (if any)
        // first, and the common prefix of a run is that of its first and last path.
        let paths = tree.paths.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        let root = self.nodes.count
        self.nodes.append(Node())
        var work: [(node: Int, paths: Range<Int>, depth: Int)] = [(root, 0..<paths.count, 0)]
        while let item = work.popLast() {
            let (index, run, depth) = item
            let first = paths[run.lowerBound].bytes
            let end = Self.commonPrefixCount(first, paths[run.upperBound - 1].bytes, from: depth)
            var node = Node(labelStart: Int32(self.labels.count), labelCount: Int32(end - depth))
            self.labels.append(contentsOf: first[depth..<end])
            var next = run.lowerBound
            if first.count == end {
                (node.prefixStart, node.prefixCount) = self.addEntries(paths[next].prefixRoutes, methods: methods)
                (node.exactStart, node.exactCount) = self.addEntries(paths[next].exactRoutes, methods: methods)
                next += 1
            }
            node.childStart = Int32(self.childBytes.count)
            while next < run.upperBound {
                let byte = paths[next].bytes[end]
                var stop = next + 1
                while stop < run.upperBound && paths[stop].bytes[end] == byte { stop += 1 }
                let child = self.nodes.count
                self.nodes.append(Node())
                self.childBytes.append(byte)
                self.childNodes.append(Int32(child))
                work.append((child, next..<stop, end))
                next = stop
            }
            node.childCount = Int32(self.childBytes.count) - node.childStart
            self.nodes[index] = node
        }
        // Children follow their parents: backwards, a node's children are done before it.
        for index in (root..<self.nodes.count).reversed() {
            let node = self.nodes[index]
            var first = Int32.max
            if node.prefixCount > 0 { first = self.entries[Int(node.prefixStart)].route }
            if node.exactCount > 0 { first = min(first, self.entries[Int(node.exactStart)].route) }
            for child in Int(node.childStart)..<Int(node.childStart + node.childCount) {
                first = min(first, self.nodes[Int(self.childNodes[child])].firstRoute)
            }
            self.nodes[index].firstRoute = first
        }
        return Int32(root)
    }

    /// Files `routes` (ascending) at a node, leaving out those an earlier one makes unreachable
    /// there: after a route for every method, or one whose methods earlier ones all take.
    private mutating func addEntries(_ routes: [Int32], methods: [Int32]) -> (start: Int32, count: Int32) {
        let start = self.entries.count
        var taken: Set<String> = []
        for route in routes {
            let set = methods[Int(route)]
            if set < 0 {
                self.entries.append(Entry(route: route, methods: -1))
                break
            }
            guard !self.methodSets[Int(set)].isSubset(of: taken) else { continue }
            taken.formUnion(self.methodSets[Int(set)])
            self.entries.append(Entry(route: route, methods: set))
        }
        return (Int32(start), Int32(self.entries.count - start))
    }

    private static func commonPrefixCount(_ a: [UInt8], _ b: [UInt8], from start: Int) -> Int {
        var count = start
        let limit = min(a.count, b.count)
        while count < limit && a[count] == b[count] { count += 1 }
        return count
    }
}

/// The distinct paths of one tree, each with the routes that name it, ascending.
private struct TreePaths {
    struct Path {
        var bytes: [UInt8]
        var prefixRoutes: [Int32] = []
        var exactRoutes: [Int32] = []
    }

    var paths: [Path] = []
    private var positions: [[UInt8]: Int] = [:]

    /// Adds a route; routes come in configuration order.
    mutating func add(_ match: RouteConfiguration.PathMatch, route: Int32) {
        let text: String
        let exact: Bool
        switch match {
        case .prefix(let prefix): (text, exact) = (prefix, false)
        case .exact(let path): (text, exact) = (path, true)
        }
        let bytes = Array(text.utf8)
        let position: Int
        if let known = self.positions[bytes] {
            position = known
        } else {
            position = self.paths.count
            self.positions[bytes] = position
            self.paths.append(Path(bytes: bytes))
        }
        if exact {
            self.paths[position].exactRoutes.append(route)
        } else {
            self.paths[position].prefixRoutes.append(route)
        }
    }
}
