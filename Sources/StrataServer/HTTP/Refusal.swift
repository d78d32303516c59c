import Foundation
import Hummingbird
import StrataWire

/// A request refused: its status, a stable code and a sentence, answered as JSON
/// (``SyncWire/ErrorBody``). Nothing was changed by a refused request.
struct Refusal: Error, HTTPResponseError {
    var status: HTTPResponse.Status
    var code: String
    var message: String
    var retryAfter: Int?

    static func unauthorized(_ why: String) -> Refusal { Refusal(status: .unauthorized, code: "unauthorized", message: why) }
    static func forbidden(_ why: String) -> Refusal { Refusal(status: .forbidden, code: "forbidden", message: why) }
    static func notFound(_ why: String) -> Refusal { Refusal(status: .notFound, code: "not_found", message: why) }
    static func tooLarge(_ why: String) -> Refusal { Refusal(status: .contentTooLarge, code: "too_large", message: why) }
    static func malformed(_ why: String) -> Refusal { Refusal(status: .unprocessableContent, code: "malformed", message: why) }
    static func unavailable(_ why: String) -> Refusal { Refusal(status: .serviceUnavailable, code: "unavailable", message: why) }
    static func tooMany(retryAfter: Int) -> Refusal {
        Refusal(status: .tooManyRequests, code: "too_many_requests", message: "too many requests: try again in \(retryAfter) s",
                retryAfter: retryAfter)
    }

    var headers: HTTPFields {
        var fields: HTTPFields = [.contentType: "application/json"]
        if status == .unauthorized { fields[.wwwAuthenticate] = "Bearer" }
        if let retryAfter { fields[.retryAfter] = String(retryAfter) }
        return fields
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = (try? JSONEncoder().encode(SyncWire.ErrorBody(status: Int(status.code), code: code, message: message))) ?? Data()
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
