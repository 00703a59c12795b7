/// An ordered list of header fields as the gateway builds them (identity headers, response
/// headers, an answer's fields): names as written, duplicates allowed, order kept.
public typealias HeaderFields = [(name: String, value: String)]
