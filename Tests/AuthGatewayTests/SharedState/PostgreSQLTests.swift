import Testing

/// Every test that uses PostgreSQL, one at a time: several at once (two debug-build gateways
/// each, server processes, a cluster's `initdb`) starve the timing-sensitive tests that run
/// beside them on two cores.
@Suite("PostgreSQL", .serialized)
enum PostgreSQLTests {}
