// Fuzz target: one control request line through proto::parse_request, which pkitd
// runs on every line a client sends. Whatever the bytes, it must return (it is
// noexcept: an escaping exception would terminate) without a sanitizer finding, and:
// an accepted request's wire line parses back to the same line; a refused one makes
// an error reply that a client parses back with the same code and id.

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "proto/reply.hpp"
#include "proto/request.hpp"

namespace {

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

std::string_view without_newline(const std::string& line) {
    check(line.ends_with('\n'));
    return std::string_view(line).substr(0, line.size() - 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace pkit::proto;
    const std::string_view line(reinterpret_cast<const char*>(data), size);
    auto request = parse_request(line);
    if (request) {
        const std::string wire = request_line(*request);
        auto again = parse_request(without_newline(wire));
        check(again.has_value() && request_line(*again) == wire);
        auto reply = parse_reply(without_newline(ok_reply(request->id, json::object())));
        check(reply.has_value() && reply->kind == Reply::Kind::result);
    } else {
        const Error& error = request.error();
        check(!error.message.empty());
        auto reply = parse_reply(without_newline(error_reply(error)));
        check(reply.has_value() && reply->kind == Reply::Kind::error);
        check(reply->error.code == error.code && reply->id == error.id);
    }
    return 0;
}
