// Fuzz target: one reply line as pkitctl reads the status rows from it. scan_json, the
// reader under proto::parse_status_rows, must make the calls nlohmann's sax_parse makes
// and accept and refuse the same texts; parse_status_rows must return (it is noexcept)
// without a sanitizer finding.

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "proto/json_scan.hpp"
#include "proto/status_rows.hpp"

namespace {

// Every call as one line of text.
class Recorder : public pkit::proto::JsonSax {
public:
    bool null() override { return record("null"); }
    bool boolean(bool value) override { return record(value ? "true" : "false"); }
    bool number_integer(number_integer_t value) override {
        return record("int " + std::to_string(value));
    }
    bool number_unsigned(number_unsigned_t value) override {
        return record("unsigned " + std::to_string(value));
    }
    bool number_float(number_float_t value, const string_t& text) override {
        return record("float " + std::to_string(value) + " " + text);
    }
    bool string(string_t& value) override { return record("string " + value); }
    bool binary(binary_t&) override { return record("binary"); }
    bool start_object(std::size_t) override { return record("{"); }
    bool key(string_t& value) override { return record("key " + value); }
    bool end_object() override { return record("}"); }
    bool start_array(std::size_t) override { return record("["); }
    bool end_array() override { return record("]"); }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
        calls += "error\n";
        return false;
    }

    std::string calls;

private:
    bool record(const std::string& call) {
        calls += call + "\n";
        return true;
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    Recorder scanned;
    Recorder reference;
    const bool scan_accepts = pkit::proto::scan_json(text, scanned);
    const bool reference_accepts = nlohmann::json::sax_parse(text, &reference);
    if (scan_accepts != reference_accepts || scanned.calls != reference.calls) {
        std::abort();
    }
    (void)pkit::proto::parse_status_rows(text);
    return 0;
}
