// Fuzz target: bytes of one HTTP connection through shell::http::RequestParser, fed
// in two pieces split where the input's first byte says (a client's bytes arrive in
// any cut). Whatever the bytes, the parser must return without a sanitizer finding;
// every request it completes has a method, an error is 400, 413, 431 or 505, and
// after an error it consumes nothing more. Fed one request at a time (max_requests 1,
// as a connection does), the same bytes give the same requests and error.

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <vector>

#include "daemon/shell/http/request_parser.hpp"

namespace {

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::size_t cut = size > 1 ? data[0] % size : 0;
    namespace http = pkit::shell::http;
    http::RequestParser parser;
    std::vector<http::Request> requests;
    auto error = parser.feed(bytes.substr(0, std::min(cut, bytes.size())), requests);
    if (!error && cut < bytes.size()) {
        error = parser.feed(bytes.substr(cut), requests);
    }
    for (const http::Request& request : requests) {
        check(!request.method.empty());
        check(request.path.size() <= bytes.size());
    }
    if (error) {
        check(error->status == 400 || error->status == 413 || error->status == 431 ||
              error->status == 505);
        std::vector<http::Request> more;
        auto again = parser.feed("GET / HTTP/1.1\r\n\r\n", more);
        check(again.has_value() && more.empty());
    }
    http::RequestParser one_by_one;
    std::vector<http::Request> each;
    std::optional<http::ParseError> each_error;
    std::string_view rest = bytes;
    while (!rest.empty() && !each_error) {
        const std::size_t before = each.size();
        each_error = one_by_one.feed(rest, each, 1);
        check(each.size() <= before + 1);
        check(one_by_one.consumed() <= rest.size());
        if (one_by_one.consumed() == 0 && each.size() == before) {
            break;
        }
        rest.remove_prefix(one_by_one.consumed());
    }
    check(each == requests);
    check(each_error == error);
    return 0;
}
