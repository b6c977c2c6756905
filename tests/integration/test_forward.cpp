// Forwarding of service output to pkitd's own stdout/stderr (SPEC §2 [output] forward,
// §1 --log-format): "NAME | line" matching the stream, the line alone, nothing, or
// JSON objects with --log-format json.

#include <sstream>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

void talker(const TempDir& dir, const std::string& forward) {
    dir.service("svc", sh_command("echo to-out; echo to-err >&2") + "[output]\nforward = \"" +
                           forward + "\"\n");
}

bool has_forwarded_line(const std::string& text, const std::string& line) {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) {
        if (l == line) {
            return true;
        }
    }
    return false;
}

void wait_done(Daemon& pkitd) {
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "svc", state_is("done"), 5s, "the run ends");
}

}  // namespace

TEST_CASE("forward = prefix writes NAME | line to the matching stream of pkitd") {
    TempDir dir;
    talker(dir, "prefix");
    Daemon pkitd(dir);
    wait_done(pkitd);
    wait_for([&] { return has_forwarded_line(pkitd.out(), "svc | to-out"); }, 5s, "the stdout line",
             [&] { return pkitd.out(); });
    wait_for([&] { return has_forwarded_line(pkitd.log(), "svc | to-err"); }, 5s, "the stderr line",
             [&] { return pkitd.log(); });
    CHECK_FALSE(has_forwarded_line(pkitd.out(), "svc | to-err"));
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("forward = raw writes the line alone and none writes nothing") {
    TempDir dir;
    SUBCASE("raw") {
        talker(dir, "raw");
        Daemon pkitd(dir);
        wait_done(pkitd);
        wait_for([&] { return has_forwarded_line(pkitd.out(), "to-out"); }, 5s, "the stdout line",
                 [&] { return pkitd.out(); });
        wait_for([&] { return has_forwarded_line(pkitd.log(), "to-err"); }, 5s, "the stderr line",
                 [&] { return pkitd.log(); });
        CHECK(pkitd.stop() == 0);
    }
    SUBCASE("none") {
        talker(dir, "none");
        Daemon pkitd(dir);
        wait_done(pkitd);
        CHECK(pkitd.stop() == 0);
        CHECK(pkitd.out().find("to-out") == std::string::npos);
        CHECK(pkitd.log().find("to-err") == std::string::npos);
    }
}

TEST_CASE("with --log-format json forwarded lines are JSON objects") {
    TempDir dir;
    talker(dir, "prefix");
    Daemon pkitd(dir, {.extra_args = {"--log-format", "json"}});
    wait_done(pkitd);
    json line;
    wait_for(
        [&] {
            std::istringstream in(pkitd.out());
            for (std::string text; std::getline(in, text);) {
                line = json::parse(text, nullptr, false);
                if (line.is_object() && line.value("text", "") == "to-out") {
                    return true;
                }
            }
            return false;
        },
        5s, "a JSON line for to-out on stdout", [&] { return pkitd.out(); });
    CHECK(line["service"] == "svc");
    CHECK(line["stream"] == "stdout");
    CHECK(line["at"].is_number());
    // Every stdout line is one JSON object: the stream stays one format.
    std::istringstream in(pkitd.out());
    for (std::string text; std::getline(in, text);) {
        CHECK_MESSAGE(json::parse(text, nullptr, false).is_object(), text);
    }
    CHECK(pkitd.stop() == 0);
}
