// Forwarding of service output to pkitd's own stdout/stderr (SPEC §2 [output] forward,
// §1 --log-format): "NAME | line" matching the stream, the line alone, nothing, or
// JSON objects with --log-format json.

#include <optional>
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

// Forwarded lines are batched (one write per turn of the loop): what reaches pkitd's
// streams must still be every line, in order, each whole and prefixed.
TEST_CASE("many small lines written quickly all arrive, in order, prefixed") {
    constexpr int k_lines = 100000;
    const std::string count = std::to_string(k_lines);
    TempDir dir;
    dir.service("svc", sh_command("seq 1 " + count + "; seq 1 " + count + " >&2"));
    auto received = [](const std::string& text, auto&& unwrap) {
        std::vector<std::string> lines;
        std::istringstream in(text);
        for (std::string line; std::getline(in, line);) {
            if (auto number = unwrap(line)) {
                lines.push_back(*number);
            }
        }
        return lines;
    };
    std::vector<std::string> expected;
    for (int i = 1; i <= k_lines; ++i) {
        expected.push_back(std::to_string(i));
    }
    SUBCASE("NAME | line on stdout and stderr") {
        Daemon pkitd(dir);
        wait_done(pkitd);
        auto prefixed = [](const std::string& line) -> std::optional<std::string> {
            if (line.starts_with("svc | ")) {
                return line.substr(6);
            }
            return std::nullopt;
        };
        wait_for([&] { return has_forwarded_line(pkitd.out(), "svc | " + count); }, 10s,
                 "the last line");
        wait_for([&] { return has_forwarded_line(pkitd.log(), "svc | " + count); }, 10s,
                 "the last stderr line");
        CHECK(pkitd.stop() == 0);
        std::string out = pkitd.out();
        CHECK(received(out, prefixed) == expected);
        // stdout holds nothing else: every byte is one of those lines.
        std::size_t bytes = 0;
        for (const auto& n : expected) {
            bytes += 6 + n.size() + 1;
        }
        CHECK(out.size() == bytes);
        CHECK(received(pkitd.log(), prefixed) == expected);
    }
    SUBCASE("one JSON object a line with --log-format json") {
        Daemon pkitd(dir, {.extra_args = {"--log-format", "json"}});
        wait_done(pkitd);
        auto text_of = [](const std::string& line) -> std::optional<std::string> {
            json object = json::parse(line, nullptr, false);
            if (!object.is_object() || object.value("service", "") != "svc") {
                return std::nullopt;
            }
            return object.value("text", "");
        };
        wait_for(
            [&] { return pkitd.out().find("\"text\":\"" + count + "\"") != std::string::npos; },
            10s, "the last stdout line");
        CHECK(pkitd.stop() == 0);
        std::istringstream in(pkitd.out());
        for (std::string line; std::getline(in, line);) {
            REQUIRE_MESSAGE(json::parse(line, nullptr, false).is_object(), line);
        }
        CHECK(received(pkitd.out(), text_of) == expected);
    }
}
