/// Every way in and every check of the authentication pipeline, in the order they run
/// (docs/architecture.md, "How to add a way in"): each is a type in this folder, registered by
/// its one line here. Proxy mode over HTTP/1.1 and HTTP/2, authorizer mode and `check
/// --request` all run this list.
enum AuthenticationSteps {
    static func make(_ context: StepContext) -> some StepList {
        NoSteps()
            .then(CredentialExtraction(context))
            .then(APIKeyAuthentication(context))
            .then(SessionAuthentication(context))
            .then(JWTVerification(context))
            .then(TokenRefresh(context))
            .then(TokenIntrospection(context))
            .then(ProofOfPossession(context))
            .then(ProfileLookup(context))
            .then(RequirementCheck(context))
            .then(TokenExchange(context))
            .then(SignedAssertion(context))
    }
}
