import Testing

@testable import AuthGateway

/// `tokens.introspection.forJWTs`: a verified JWT is introspected too; its own claims stay the
/// request's claims, and the answer's `cnf.jkt` may add a DPoP binding, never weaken one.
@Suite("forJWTs: a verified JWT and its introspection answer")
struct IntrospectedJWTTests {
    static func token(_ claims: JSONObject) -> VerifiedToken {
        VerifiedToken(
            issuerIndex: 0, generation: 3, claims: claims, subject: claims["sub"]?.stringValue,
            expiresAt: 2_000_000_000, notBefore: nil, issuedAt: 1_700_000_000,
            leewaySeconds: 5
        )
    }

    @Test func theJWTsClaimsWinOverTheAnswers() throws {
        let jwt = Self.token(["sub": "alice", "scope": "read", "iss": "https://idp"])
        let answer: JSONObject = [
            "active": true, "sub": "mallory", "scope": "admin", "username": "alice", "exp": 2_000_000_000,
        ]
        let adopted = try #require(IntrospectedJWT.adopt(jwt, answer: answer))
        #expect(adopted === jwt)
        #expect(adopted.claims["sub"] == "alice")
        #expect(adopted.claims["scope"] == "read")
        #expect(adopted.claims["username"] == nil)
    }

    @Test func aBindingInTheAnswerIsAddedToAnUnboundJWT() throws {
        let jwt = Self.token(["sub": "alice", "cnf": ["x5t#S256": "cert-thumbprint"]])
        let adopted = try #require(IntrospectedJWT.adopt(jwt, answer: ["active": true, "cnf": ["jkt": "key-1"]]))
        #expect(adopted.claims["cnf"] == ["x5t#S256": "cert-thumbprint", "jkt": "key-1"])
        // The binding ProofOfPossession reads is the adopted one, not the JWT's absence of one.
        #expect(jwt.confirmationThumbprint == nil && adopted.confirmationThumbprint == "key-1")
        #expect(adopted.claims["sub"] == "alice")
        #expect(adopted.subject == "alice")
        #expect(
            adopted.issuerIndex == 0 && adopted.generation == 3 && adopted.expiresAt == 2_000_000_000
                && adopted.leewaySeconds == 5)
        let bare = Self.token(["sub": "bob"])
        #expect(
            IntrospectedJWT.adopt(bare, answer: ["active": true, "cnf": ["jkt": "key-2"]])?.claims["cnf"] == [
                "jkt": "key-2"
            ])
    }

    /// `cnf.jkt` as ProofOfPossession reads it, taken from the claims once per verification:
    /// only a string `jkt` inside an object `cnf` binds the token.
    @Test func theBindingIsReadFromTheClaimsOnce() {
        #expect(Self.token(["sub": "a", "cnf": ["jkt": "key-1"]]).confirmationThumbprint == "key-1")
        #expect(Self.token(["sub": "a", "cnf": ["jkt": "key-1", "x5t#S256": "c"]]).confirmationThumbprint == "key-1")
        #expect(Self.token(["sub": "a"]).confirmationThumbprint == nil)
        #expect(Self.token(["sub": "a", "cnf": ["x5t#S256": "c"]]).confirmationThumbprint == nil)
        #expect(Self.token(["sub": "a", "cnf": ["jkt": 42]]).confirmationThumbprint == nil)
        #expect(Self.token(["sub": "a", "cnf": "key-1"]).confirmationThumbprint == nil)
        #expect(Self.token(["sub": "a", "jkt": "key-1"]).confirmationThumbprint == nil)
    }

    @Test func aBindingOfTheJWTIsNeverRemovedOrReplaced() throws {
        let bound = Self.token(["sub": "alice", "cnf": ["jkt": "key-1"]])
        // No cnf, or a cnf without jkt, in the answer: the JWT's binding stays.
        #expect(IntrospectedJWT.adopt(bound, answer: ["active": true]) === bound)
        #expect(IntrospectedJWT.adopt(bound, answer: ["active": true, "cnf": ["x5t#S256": "c"]]) === bound)
        #expect(IntrospectedJWT.adopt(bound, answer: ["active": true, "cnf": ["jkt": "key-1"]]) === bound)
        // Another key, or a jkt that is not a usable string: refused.
        #expect(IntrospectedJWT.adopt(bound, answer: ["active": true, "cnf": ["jkt": "key-2"]]) == nil)
        #expect(IntrospectedJWT.adopt(bound, answer: ["active": true, "cnf": ["jkt": 42]]) == nil)
        #expect(IntrospectedJWT.adopt(Self.token(["sub": "x"]), answer: ["active": true, "cnf": ["jkt": ""]]) == nil)
    }
}
