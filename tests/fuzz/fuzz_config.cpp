// Fuzz target: one configuration file's text through the loader (config::load_text),
// both as a service file and as pkitd.toml. Whatever the bytes, the loader must
// return, without a sanitizer finding, either a model or diagnostics that are
// positioned in that file, non-empty and in order; a valid service is named after
// its file. A broken promise aborts, which libFuzzer reports as a crash.

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config/loader.hpp"

namespace {

using pkit::config::LoadResult;

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

void check_result(const LoadResult& result, const std::string& file) {
    if (result) {
        return;
    }
    check(!result.error().empty());
    int line = 0;
    int column = 0;
    for (const auto& diagnostic : result.error()) {
        check(diagnostic.file == file && !diagnostic.message.empty());
        check(diagnostic.line >= 1 && diagnostic.column >= 1);
        check(diagnostic.line > line || (diagnostic.line == line && diagnostic.column >= column));
        line = diagnostic.line;
        column = diagnostic.column;
        check(diagnostic.to_string().starts_with(file + ":"));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // Fixed options, whoever runs the fuzzer: as root, any user or group may be named
    // (and is looked up), which reaches more of the loader.
    const pkit::config::LoadOptions options{.as_root = true, .uid = 0, .gid = 0};
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    const std::string service_file = "conf/services/fuzz.toml";
    auto service =
        pkit::config::load_text(text, pkit::config::TextKind::service, service_file, options);
    check_result(service, service_file);
    if (service) {
        check(service->services.size() == 1 && service->services[0].name == "fuzz");
    }

    const std::string daemon_file = "conf/pkitd.toml";
    auto daemon =
        pkit::config::load_text(text, pkit::config::TextKind::daemon, daemon_file, options);
    check_result(daemon, daemon_file);
    if (daemon) {
        check(daemon->services.empty());
    }
    return 0;
}
