// pkitd's command line (SPEC §1): an unknown option or a bad --log-format is a usage
// error (exit 2, the problem named on stderr); --check on a configuration directory
// that does not exist exits 2 naming the directory. Each also carries --check and a
// valid --config, so that a pkitd that accepted the bad argument would exit 0 at once
// instead of running.

#include <string>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

bool mentions(const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("pkitd --bogus exits 2 and names the unknown option on stderr") {
    TempDir dir;
    const auto result = run_pkitd({"--check", "--config", dir.str(), "--bogus"}, 10s);
    INFO("stdout: " << result.out);
    INFO("stderr: " << result.err);
    CHECK_FALSE(result.timed_out);
    CHECK(result.exit_code == 2);
    CHECK(mentions(result.err, "--bogus"));
    CHECK_FALSE(mentions(result.out, "configuration OK"));
}

TEST_CASE("pkitd --log-format xml exits 2 and names the bad value on stderr") {
    TempDir dir;
    const auto result = run_pkitd({"--check", "--config", dir.str(), "--log-format", "xml"}, 10s);
    INFO("stdout: " << result.out);
    INFO("stderr: " << result.err);
    CHECK_FALSE(result.timed_out);
    CHECK(result.exit_code == 2);
    CHECK(mentions(result.err, "--log-format"));
    CHECK(mentions(result.err, "xml"));
    CHECK_FALSE(mentions(result.out, "configuration OK"));
}

TEST_CASE("pkitd --log-format accepts text and json") {
    TempDir dir;
    for (const std::string format : {"text", "json"}) {
        const auto result =
            run_pkitd({"--check", "--config", dir.str(), "--log-format", format}, 10s);
        INFO("--log-format " << format << ": " << result.all());
        CHECK(result.exit_code == 0);
        CHECK(mentions(result.out, "configuration OK"));
    }
}

TEST_CASE("pkitd --check with a nonexistent --config DIR exits 2 naming the DIR") {
    TempDir dir;
    const std::string missing = dir.file("no-such-config");
    const auto result = run_pkitd({"--check", "--config", missing}, 10s);
    INFO("stdout: " << result.out);
    INFO("stderr: " << result.err);
    CHECK_FALSE(result.timed_out);
    CHECK(result.exit_code == 2);
    CHECK(mentions(result.err, missing));
    CHECK(mentions(result.err, "configuration directory"));
    CHECK_FALSE(mentions(result.out, "configuration OK"));
}
