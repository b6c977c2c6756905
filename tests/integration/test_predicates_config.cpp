// Bad predicate and storm settings (SPEC §1, §2): each is reported by `pkitd --check`
// as FILE:LINE:COLUMN: error: at the offending value or element, all of them, exit 2.

#include <algorithm>
#include <regex>
#include <sstream>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

std::vector<std::string> predicate_error_lines(const std::string& text) {
    static const std::regex k_error(R"(^.+:\d+:\d+: error: .+$)");
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (std::regex_match(line, k_error)) {
            out.push_back(line);
        }
    }
    return out;
}

// The error line starting with `prefix` (FILE:LINE:COLUMN: error: ), or "".
std::string line_starting(const std::vector<std::string>& lines, const std::string& prefix) {
    auto it = std::find_if(lines.begin(), lines.end(),
                           [&](const std::string& l) { return l.rfind(prefix, 0) == 0; });
    return it == lines.end() ? std::string() : *it;
}

struct BadInput {
    std::string file;  // relative to DIR
    std::string toml;
    std::string where;  // "LINE:COLUMN"
    std::string words;  // expected in the message
};

const std::vector<BadInput>& bad_inputs() {
    static const std::vector<BadInput> inputs{
        {"services/regex.toml", "command = [\"/bin/true\"]\n[stop_when]\noutput_matches = \"(\"\n",
         "3:18", "output_matches"},
        {"services/launch.toml",
         "command = [\"/bin/true\"]\n[give_up_when]\nlaunch_errors = [\"not_found\", \"nope\"]\n",
         "3:31", "nope"},
        {"services/storm.toml",
         "command = [\"/bin/true\"]\n[storm]\npause = \"1s\"\nthreshold = -1.0\n", "4:13",
         "threshold"},
    };
    return inputs;
}

}  // namespace

TEST_CASE("predicate and storm check: each bad value alone is a positioned error, exit 2") {
    for (const auto& bad : bad_inputs()) {
        TempDir dir;
        write_file(dir.path() / bad.file, bad.toml);
        const auto result = run_pkitd({"--check", "--config", dir.str()});
        INFO(bad.file << ":\n" << bad.toml << "output:\n" << result.all());
        CHECK(result.exit_code == 2);
        const auto errors = predicate_error_lines(result.all());
        CHECK(errors.size() == 1);
        const std::string line =
            line_starting(errors, dir.str() + "/" + bad.file + ":" + bad.where + ": error: ");
        CHECK_FALSE(line.empty());
        CHECK(line.find(bad.words) != std::string::npos);
    }
}

TEST_CASE("predicate and storm check: every bad value of a tree is reported in one pass") {
    TempDir dir;
    for (const auto& bad : bad_inputs()) {
        write_file(dir.path() / bad.file, bad.toml);
    }
    // The daemon-wide guard refuses a negative threshold too.
    dir.daemon_config("[storm]\npause = \"5s\"\nthreshold = -20\n");
    dir.service("good", "command = [\"/bin/true\"]\n[give_up_when]\nexit_codes = [78]\n");

    const auto result = run_pkitd({"--check", "--config", dir.str()});
    INFO("output:\n" << result.all());
    CHECK(result.exit_code == 2);
    const auto errors = predicate_error_lines(result.all());
    CHECK(errors.size() == bad_inputs().size() + 1);
    for (const auto& bad : bad_inputs()) {
        CHECK_FALSE(line_starting(errors, dir.str() + "/" + bad.file + ":" + bad.where).empty());
    }
    CHECK_FALSE(line_starting(errors, dir.str() + "/pkitd.toml:3:13: error: ").empty());

    const auto cli = run_ctl({"check", dir.str()});
    CHECK(cli.exit_code == 2);
    CHECK(predicate_error_lines(cli.all()).size() == errors.size());
}
