/// What a pool holds: HTTP/1.1 connections, or HTTP/2 connections whose streams are leased.
enum PooledConnection: Equatable {
    case http1(UpstreamConnection)
    case http2(UpstreamHTTP2Connection)

    var targetIndex: Int {
        switch self {
        case .http1(let connection): return connection.targetIndex
        case .http2(let connection): return connection.targetIndex
        }
    }

    func close() {
        switch self {
        case .http1(let connection): connection.close()
        case .http2(let connection): connection.close()
        }
    }
}
