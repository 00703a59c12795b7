/// The connection facts the `X-Forwarded-*` headers are made of.
package struct ClientConnectionInfo {
    let peerIP: String
    let peerIsTrustedProxy: Bool
    let isTLS: Bool

    package init(peerIP: String, peerIsTrustedProxy: Bool, isTLS: Bool) {
        self.peerIP = peerIP
        self.peerIsTrustedProxy = peerIsTrustedProxy
        self.isTLS = isTLS
    }
}
