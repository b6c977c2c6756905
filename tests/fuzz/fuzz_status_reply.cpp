// Fuzz target: one reply line as pkitctl reads the status rows from it. scan_json, the
// reader under proto::parse_status_rows, must make the calls nlohmann's sax_parse makes
// and accept and refuse the same texts; parse_status_rows must return (it is noexcept)
// without a sanitizer finding; and where result_text finds a result (`--json status`
// prints it as it came), parse_reply must find a result that is the same JSON, unless
// the line nests deeper than parse_reply takes (k_max_reply_depth): then it refuses it.

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "proto/json_scan.hpp"
#include "proto/reply.hpp"
#include "proto/status_rows.hpp"
#include "tests/unit/proto/json_recorder.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    pkit::proto::test::JsonRecorder scanned;
    pkit::proto::test::JsonRecorder reference;
    const bool scan_accepts = pkit::proto::scan_json(text, scanned);
    const bool reference_accepts = nlohmann::json::sax_parse(text, &reference);
    if (scan_accepts != reference_accepts || scanned.calls != reference.calls) {
        std::abort();
    }
    (void)pkit::proto::parse_status_rows(text);
    if (auto result = pkit::proto::result_text(text)) {
        auto reply = pkit::proto::parse_reply(text);
        if (pkit::proto::json_deeper_than(text, pkit::proto::k_max_reply_depth + 1)) {
            // Refused unread: a tree that deep would cost the client its stack.
            if (reply) {
                std::abort();
            }
        } else if (!reply || reply->kind != pkit::proto::Reply::Kind::result ||
                   nlohmann::json::parse(*result) != reply->body) {
            std::abort();
        }
    }
    return 0;
}
