/// Where route matching looks: hosts by hash, paths by a radix tree of their bytes, so that a
/// request's cost does not grow with the number of routes (docs/configuration.md).
///
/// One tree holds the routes without `host`, one more each configured host (`RouteHostTable`,
/// lower-cased); all trees live in the same flat arrays. A node holds the routes whose
/// `pathPrefix` or `path` ends at it. A request walks the host-less tree and its host's tree
/// along its path's bytes — at most the path's length deep — and the smallest route index among
/// the matches is the route a first-to-last scan finds. A prefix is a plain byte prefix, as
/// `String.hasPrefix` is on the request paths that reach matching (visible ASCII only:
/// docs/configuration.md), so `/api` matches `/apix` too.
///
/// Invariants (`RouteIndex.init`):
/// - a node's entry lists are ascending by route index and hold no entry that an earlier one
///   of the same list makes unreachable (an entry for every method, or methods all taken by
///   earlier entries): a list is no longer than the table's distinct methods plus one;
/// - `firstRoute` of a node is the smallest route index at or below it, so a walk stops as soon
///   as nothing further down can come before what it found;
/// - a node's label starts with the byte it is filed under in its parent; children are
///   ascending by that byte; a tree's nodes follow their parents in `nodes`.
struct RouteIndex: Sendable {
    struct Node: Sendable {
        /// The bytes from the parent's end to this node's: `labels[labelStart ..< labelStart + labelCount]`.
        var labelStart: Int32 = 0
        var labelCount: Int32 = 0
        /// `childBytes` and `childNodes[childStart ..< childStart + childCount]`.
        var childStart: Int32 = 0
        var childCount: Int32 = 0
        /// The routes whose `pathPrefix` ends here: `entries[prefixStart ..< prefixStart + prefixCount]`.
        var prefixStart: Int32 = 0
        var prefixCount: Int32 = 0
        /// The routes whose `path` ends here.
        var exactStart: Int32 = 0
        var exactCount: Int32 = 0
        /// The smallest route index at or below this node.
        var firstRoute: Int32 = .max
    }

    /// A route filed at a node.
    struct Entry: Sendable {
        var route: Int32
        /// Its `methods` in `methodSets`; -1: every method.
        var methods: Int32
    }

    var nodes: [Node] = []
    var labels: [UInt8] = []
    var childBytes: [UInt8] = []
    var childNodes: [Int32] = []
    var entries: [Entry] = []
    var methodSets: [Set<String>] = []
    /// The root of each configured host's tree.
    var hosts = RouteHostTable(capacity: 0)
    /// The smallest index of a route with a host: a match before it needs no host lookup.
    var firstHostRoute: Int32 = .max
    /// The root of the tree of routes without a host; -1 when every route has one.
    var anyHostRoot: Int32 = -1

    /// The index (in configuration order) of the first route that matches, or nil.
    func first(host: Substring?, path: String, method: String) -> Int? {
        // Native strings (every request path) are contiguous: no copy.
        let found =
            path.utf8.withContiguousStorageIfAvailable { self.first(host: host, path: $0, method: method) }
            ?? Array(path.utf8).withUnsafeBufferPointer { self.first(host: host, path: $0, method: method) }
        return found == .max ? nil : Int(found)
    }

    private func first(host: Substring?, path: UnsafeBufferPointer<UInt8>, method: String) -> Int32 {
        var best = Int32.max
        if self.anyHostRoot >= 0 {
            best = self.first(from: self.anyHostRoot, path: path, method: method, before: best)
        }
        // Hashed only when a host route could still come first.
        if self.firstHostRoute < best, let host, let root = self.hosts.root(of: host) {
            best = self.first(from: root, path: path, method: method, before: best)
        }
        return best
    }

    /// The smallest index below `limit` of a route of the tree at `root` that matches, else `limit`.
    private func first(
        from root: Int32, path: UnsafeBufferPointer<UInt8>, method: String, before limit: Int32
    ) -> Int32 {
        var best = limit
        var node = Int(root)
        var depth = 0
        while true {
            let current = self.nodes[node]
            if current.firstRoute >= best { return best }
            let end = depth + Int(current.labelCount)
            guard end <= path.count else { return best }
            var label = Int(current.labelStart)
            while depth < end {
                if path[depth] != self.labels[label] { return best }
                depth += 1
                label += 1
            }
            if current.prefixCount > 0 {
                best = self.first(current.prefixStart, current.prefixCount, allowing: method, before: best)
            }
            if depth == path.count {
                if current.exactCount > 0 {
                    best = self.first(current.exactStart, current.exactCount, allowing: method, before: best)
                }
                return best
            }
            guard let child = self.child(of: current, byte: path[depth]) else { return best }
            node = child
        }
    }

    /// The first route of an entry list that takes `method`, if it comes before `limit`; else `limit`.
    @inline(__always)
    private func first(_ start: Int32, _ count: Int32, allowing method: String, before limit: Int32) -> Int32 {
        for index in Int(start)..<Int(start + count) {
            let entry = self.entries[index]
            if entry.route >= limit { return limit }
            if entry.methods < 0 || self.methodSets[Int(entry.methods)].contains(method) { return entry.route }
        }
        return limit
    }

    @inline(__always)
    private func child(of node: Node, byte: UInt8) -> Int? {
        var low = Int(node.childStart)
        var high = low + Int(node.childCount)
        while low < high {
            let middle = (low + high) >> 1
            let found = self.childBytes[middle]
            if found == byte { return Int(self.childNodes[middle]) }
            if found < byte { low = middle + 1 } else { high = middle }
        }
        return nil
    }
}
