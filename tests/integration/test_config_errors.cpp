// Configuration errors (SPEC §1): `--check` and pkitd itself report every problem as
// FILE:LINE:COLUMN: error: MESSAGE and exit 2; a valid tree checks clean.

#include <algorithm>
#include <regex>
#include <sstream>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// Lines of `text` that look like positioned errors.
std::vector<std::string> error_lines(const std::string& text) {
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

bool has_line_starting(const std::vector<std::string>& lines, const std::string& prefix) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.rfind(prefix, 0) == 0; });
}

// Two bad files: an unknown key (close to a known one) and a bad value.
void write_two_bad_files(const TempDir& dir) {
    dir.service("a", "command = [\"/bin/true\"]\n\n[restart]\nmax_backof = \"1s\"\n");
    dir.service("b", "command = [\"/bin/true\"]\ntimeout = \"soon\"\n");
}

}  // namespace

TEST_CASE("--check on an invalid tree prints every positioned error and exits 2") {
    TempDir dir;
    write_two_bad_files(dir);
    dir.service("ok", "command = [\"/bin/true\"]\n");

    SUBCASE("pkitd --check") {
        const auto result = run_pkitd({"--check", "--config", dir.str()});
        INFO("output:\n" << result.all());
        CHECK(result.exit_code == 2);
        const auto errors = error_lines(result.all());
        CHECK(errors.size() == 2);
        // The unknown key at the key, with a suggestion; the bad value at the value.
        CHECK(has_line_starting(errors, dir.str() + "/services/a.toml:4:1: error: "));
        CHECK(result.all().find("did you mean \"max_backoff\"?") != std::string::npos);
        CHECK(has_line_starting(errors, dir.str() + "/services/b.toml:2:11: error: "));
    }
    SUBCASE("pkitctl check DIR") {
        const auto result = run_ctl({"check", dir.str()});
        INFO("output:\n" << result.all());
        CHECK(result.exit_code == 2);
        CHECK(error_lines(result.all()).size() == 2);
    }
}

TEST_CASE("--check on a valid tree exits 0 and starts nothing") {
    TempDir dir;
    dir.service("web", sh_command("touch " + dir.file("started") + "; exec sleep 1000") +
                           restart_table("always", "1s"));
    dir.daemon_config("shutdown_timeout = \"10s\"\n");
    const auto result = run_pkitd({"--check", "--config", dir.str()});
    CHECK_MESSAGE(result.exit_code == 0, result.all());
    CHECK(error_lines(result.all()).empty());
    CHECK_FALSE(fs::exists(dir.file("started")));
    CHECK(run_ctl({"check", dir.str()}).exit_code == 0);
}

TEST_CASE("pkitd on an invalid tree exits 2 without starting anything") {
    TempDir dir;
    write_two_bad_files(dir);
    dir.service("ok", sh_command("touch " + dir.file("started") + "; exec sleep 1000"));
    const auto result = run_pkitd({"--config", dir.str(), "--socket", dir.file("pkitd.sock")}, 10s);
    INFO("output:\n" << result.all());
    CHECK(result.exit_code == 2);
    CHECK(error_lines(result.all()).size() == 2);
    CHECK_FALSE(fs::exists(dir.file("started")));
    CHECK(marker_processes(dir.str()).empty());
}

TEST_CASE("every table and key of the contract is accepted by --check") {
    // Nothing is refused as "not supported yet": each section has its behaviour.
    TempDir dir;
    dir.daemon_config(
        "shutdown_timeout = \"5s\"\ncontrol_users = [\"root\"]\ncontrol_group = \"root\"\n"
        "[storm]\npause = \"10s\"\nthreshold = 50.0\ndecay = \"60s\"\n"
        "[root]\nmax_restarts = 1\nwithin = \"60s\"\n"
        "[groups.backend]\nstrategy = \"rest_for_one\"\nmembers = [\"db\", \"api\"]\n"
        "max_restarts = 3\nwithin = \"30s\"\n");
    dir.service("db",
                "command = [\"/bin/true\"]\nescalate = true\n"
                "[ready]\nnotify = true\ntimeout = \"10s\"\n"
                "[health]\nwatchdog = \"5s\"\n");
    dir.service("api",
                "command = [\"/bin/true\"]\n"
                "[storm]\npause = \"30s\"\n"
                "[stop_when]\nexit_codes = [0]\nsignals = [\"TERM\"]\noutput_matches = \"^done$\"\n"
                "[give_up_when]\nexit_codes = [78]\nlaunch_errors = [\"not_found\", \"any\"]\n"
                "[health]\nhttp = \"http://127.0.0.1:8080/healthz\"\ninterval = \"5s\"\n"
                "[ready]\ntcp = \"127.0.0.1:8080\"\n");
    const auto result = run_pkitd({"--check", "--config", dir.str()});
    INFO("output:\n" << result.all());
    CHECK(result.exit_code == 0);
    CHECK(error_lines(result.all()).empty());
}

TEST_CASE("pkitd --version and --help exit 0") {
    const auto version = run_pkitd({"--version"});
    CHECK(version.exit_code == 0);
#ifdef PKIT_VERSION
    CHECK_MESSAGE(version.all().find(PKIT_VERSION) != std::string::npos, version.all());
#endif
    const auto help = run_pkitd({"--help"});
    CHECK(help.exit_code == 0);
    CHECK_MESSAGE(help.all().find("--config") != std::string::npos, help.all());
    CHECK_MESSAGE(help.all().find("--check") != std::string::npos, help.all());
}
