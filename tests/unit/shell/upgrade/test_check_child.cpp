// The children that vet an upgrade's binary (SPEC §16): what their output says, the
// state format chosen for the next pkitd, and a child's output as a message.

#include <doctest/doctest.h>

#include <sys/wait.h>

#include "daemon/shell/upgrade/check_child.hpp"

namespace pkit::shell::upgrade {
namespace {

TEST_CASE("the check's answer names the pkitd and the formats it reads") {
    CheckAnswer answer = parse_check_answer("pkitd 0.9.1\nstate-format 1 2 3\n");
    CHECK(answer.version == "0.9.1");
    CHECK(answer.formats == std::vector<int>{1, 2, 3});
    CHECK(common_format(answer, 2, 3) == 3);
    // An older pkitd reads up to 2: it gets version 2, without the clients.
    CHECK(common_format(parse_check_answer("pkitd 0.8.0\nstate-format 1 2\n"), 2, 3) == 2);
    // A newer one that reads only what this pkitd cannot write: none.
    CHECK(common_format(parse_check_answer("pkitd 9.0.0\nstate-format 1 99\n"), 2, 3) == 0);
    CHECK(parse_check_answer("hello\n").version.empty());
}

TEST_CASE("a child's outcome and output are worded for the reply") {
    CheckChild::Outcome outcome;
    outcome.wait_status = 0;
    CHECK(outcome.failure(std::chrono::seconds(5)).empty());
    outcome.wait_status = 1 << 8;  // exit 1
    CHECK(outcome.failure(std::chrono::seconds(5)) == "exited 1");
    outcome.wait_status = SIGSEGV;
    CHECK(outcome.failure(std::chrono::seconds(5)) == "was killed by SIGSEGV");
    outcome.timed_out = true;
    outcome.wait_status = SIGKILL;
    CHECK(outcome.failure(std::chrono::seconds(10)) == "did not finish within 10 s");
    CHECK(output_words("  first line \n\n\tsecond\x01\n") == "first line; second?");
    CHECK(output_words(std::string(2000, 'x'), 10) == "xxxxxxxxxx...");
}

}  // namespace
}  // namespace pkit::shell::upgrade
