// --version of pkitd and pkitctl: one form for both, `PROGRAM VERSION`, then
// ` (git REVISION)` for a build from a git checkout (packaging/cmake/build_info.cmake).

#include <regex>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

TEST_CASE("pkitd --version and pkitctl --version print the same form") {
    auto pkitd = run_pkitd({"--version"});
    auto pkitctl = run_ctl({"--version"});
    REQUIRE(pkitd.exit_code == 0);
    REQUIRE(pkitctl.exit_code == 0);
    const std::string version = PKIT_VERSION;
    const std::regex form_d("pkitd " + std::regex_replace(version, std::regex("\\."), "\\.") +
                            "( \\(git [0-9a-f]+\\))?\n");
    const std::regex form_ctl("pkitctl " + std::regex_replace(version, std::regex("\\."), "\\.") +
                              "( \\(git [0-9a-f]+\\))?\n");
    CHECK_MESSAGE(std::regex_match(pkitd.out, form_d), pkitd.out);
    CHECK_MESSAGE(std::regex_match(pkitctl.out, form_ctl), pkitctl.out);
    // The same build: the same revision, or none for both.
    auto revision = [](const std::string& line) {
        auto at = line.find(" (git ");
        return at == std::string::npos ? std::string() : line.substr(at);
    };
    CHECK(revision(pkitd.out) == revision(pkitctl.out));
}
