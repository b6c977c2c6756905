#include "tests/integration/harness_switches.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <system_error>

#include "tests/integration/harness_doctest.hpp"

namespace pkit::itest {

namespace {

// The number after `key` at the start of a line of a /proc key-value file, or -1.
long proc_field(const std::string& text, std::string_view key) {
    std::size_t at = 0;
    while ((at = text.find(key, at)) != std::string::npos) {
        if (at == 0 || text[at - 1] == '\n') {
            return std::strtol(text.c_str() + at + key.size(), nullptr, 10);
        }
        at += key.size();
    }
    return -1;
}

}  // namespace

Switches read_switches(pid_t pid) {
    Switches s;
    const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(tasks, error)) {
        std::ifstream in(entry.path() / "status");
        std::stringstream buffer;
        buffer << in.rdbuf();
        const std::string text = buffer.str();
        const long v = proc_field(text, "voluntary_ctxt_switches:");
        const long n = proc_field(text, "nonvoluntary_ctxt_switches:");
        if (v >= 0 && n >= 0) {
            s.voluntary += v;
            s.nonvoluntary += n;
            ++s.threads;
        }
    }
    return s;
}

std::string text_of(const Switches& s) {
    return std::to_string(s.voluntary) + " voluntary + " + std::to_string(s.nonvoluntary) +
           " involuntary over " + std::to_string(s.threads) + " threads";
}

Switches settle_switches(pid_t pid, std::chrono::milliseconds quiet,
                         std::chrono::milliseconds timeout) {
    Switches last = read_switches(pid);
    auto last_change = std::chrono::steady_clock::now();
    const auto deadline = last_change + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        const Switches now = read_switches(pid);
        if (now.total() != last.total()) {
            last = now;
            last_change = std::chrono::steady_clock::now();
        } else if (std::chrono::steady_clock::now() - last_change >= quiet) {
            return last;
        }
        ::usleep(15000);
    }
    FAIL("pkitd's context switches did not stay unchanged for " << quiet.count()
                                                                << " ms: " << text_of(last));
    return last;
}

}  // namespace pkit::itest
