import NIOSSL

/// `backends.<name>.tls` (docs/forwarding.md): how the gateway verifies an `https` (or `h2`)
/// backend and which client certificate it presents.
///
/// The files are read and parsed by `check` (the loader); the parsed certificates and key live
/// here, so what was validated is what the gateway uses, and a reload that reads different
/// bytes under the same file names makes the backend count as changed (new connections use
/// the new material; pooled ones finish with theirs).
public struct BackendTLSConfiguration: Sendable, Equatable {
    /// The only trust anchors for this backend; nil: the system trust store (never the auth
    /// service's CA).
    public var caCertificatePEMFile: String?
    /// Sent as SNI and checked against the backend's certificate; nil: each URL's host.
    public var serverName: String?
    /// A client certificate (mutual TLS), with `privateKeyPEMFile`.
    public var certificatePEMFile: String?
    public var privateKeyPEMFile: String?
    /// No verification at all: logged as a warning at every start and reload.
    public var insecureSkipVerify = false

    /// What `caCertificatePEMFile` held.
    public var caCertificates: [NIOSSLCertificate] = []
    /// What `certificatePEMFile` held: the leaf first, then intermediates.
    public var certificateChain: [NIOSSLCertificate] = []
    /// What `privateKeyPEMFile` held.
    public var privateKey: NIOSSLPrivateKey?

    public init() {}

    /// A client certificate is configured.
    public var isMutual: Bool { self.privateKey != nil && !self.certificateChain.isEmpty }
}
