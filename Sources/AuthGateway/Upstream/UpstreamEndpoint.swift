/// A call target of the gateway's own: one of the loop's clients (an origin) and the path
/// (with query) on it.
struct UpstreamEndpoint {
    let client: UpstreamClient
    let path: String
}
