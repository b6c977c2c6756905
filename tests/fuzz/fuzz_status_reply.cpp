// Fuzz target: one reply line as pkitctl reads the status rows from it. scan_json, the
// reader under proto::parse_status_rows, must make the calls nlohmann's sax_parse makes
// and accept and refuse the same texts; parse_status_rows must return (it is noexcept)
// without a sanitizer finding.

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "proto/json_scan.hpp"
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
    return 0;
}
