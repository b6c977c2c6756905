// output_matches cannot knock pkitd over (SPEC §2): patterns that made
// std::regex overflow its stack, stall for seconds or never end are searched in linear
// time, pkitd keeps answering, and the predicate still judges the line that matches;
// a pattern over 4 KiB or 250 RE2 instructions is a positioned error at load and at
// reload; a line is searched in its first 2 KiB.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

struct Pathological {
    std::string pattern;
    std::string miss;  // a line the pattern does not match
    std::string hit;   // a line of the same kind it does match
};

std::string alternating(std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
        out += i % 2 == 0 ? 'a' : 'b';
    }
    return out;
}

// "error" inside the first 2 KiB, the part of a line that is searched.
std::string with_error_inside(std::size_t n) {
    std::string out(n, 'e');
    out.replace(1000, 5, "error");
    return out;
}

// A service that prints the line in `file` and exits 1, judged by `pattern`.
std::string printer(const std::string& file, const std::string& pattern,
                    const std::string& policy) {
    return sh_command("cat " + file + "; exit 1") + restart_table(policy, "50ms") +
           "[stop_when]\noutput_matches = " + toml_str(pattern) + "\n";
}

std::string long_pattern() {
    return std::string(100000, 'a');
}

}  // namespace

TEST_CASE("output_matches with a pathological pattern leaves pkitd answering") {
    Pathological p;
    SUBCASE("(a|b)*c against 12,000 characters of a and b") {
        p = {"(a|b)*c", alternating(12000), alternating(2000) + "c" + alternating(10000)};
    }
    SUBCASE(".*error.* against a 16 KiB line") {
        p = {".*error.*", std::string(16 * 1024, 'e'), with_error_inside(16 * 1024)};
    }
    SUBCASE("(a*)*b against 40 a") {
        p = {"(a*)*b", std::string(40, 'a'), std::string(40, 'a') + "b"};
    }
    TempDir dir;
    write_file(dir.file("miss"), p.miss + "\n");
    write_file(dir.file("hit"), p.hit + "\n");
    // `miss` prints a line that does not match: under policy never its crash ends
    // policy_satisfied. `hit` prints one that does: stop_when ends it as predicate.
    dir.service("miss", printer(dir.file("miss"), p.pattern, "never"));
    dir.service("hit", printer(dir.file("hit"), p.pattern, "on_crash"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();

    json miss = wait_status(client, "miss", state_is("failed"), 10s, "miss ends");
    CHECK(miss["stopped"] == "policy_satisfied");
    json hit = wait_status(client, "hit", state_is("failed"), 10s, "hit ends");
    CHECK(hit["stopped"] == "predicate");
    CHECK(hit["run"] == 1);

    // Alive and answering (the deadlines are liveness bounds, not speed bounds).
    json pong = client.command("ping", 5s);
    CHECK_MESSAGE(pong["ok"] == true, pong.dump());
    json logs = client.request({{"cmd", "logs"}, {"service", "miss"}}, 5s);
    REQUIRE_MESSAGE(logs["ok"] == true, logs.dump());
    CHECK(texts(logs["result"]) == std::vector<std::string>{p.miss});
    json explain = client.request({{"cmd", "explain"}, {"service", "hit"}}, 5s);
    REQUIRE_MESSAGE(explain["ok"] == true, explain.dump());
    const std::string text = explain["result"]["text"].get<std::string>();
    CHECK_MESSAGE(text.find("matched stop_when.output_matches") != std::string::npos, text);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a 100k-character output_matches is a positioned error of pkitd --check") {
    TempDir dir;
    dir.service(
        "svc", sh_command("exit 0") + "[stop_when]\noutput_matches = \"" + long_pattern() + "\"\n");
    CommandResult r = run_pkitd({"--check", "--config", dir.str()}, 10s);
    INFO(r.all().substr(0, 2000));
    CHECK(r.exit_code == 2);
    CHECK(r.all().find("services/svc.toml:3:18: error: stop_when.output_matches: invalid "
                       "regular expression: too long (100000 bytes, at most 4096)") !=
          std::string::npos);
}

TEST_CASE("a reload with a 100k-character output_matches is refused and pkitd keeps serving") {
    TempDir dir;
    const std::string runner = sh_command("exec sleep 1000") + "[stop]\ntimeout = \"1s\"\n";
    dir.service("svc", runner + "[give_up_when]\noutput_matches = \"FATAL\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json before = wait_status(client, "svc", state_is("running"), 10s, "svc runs");

    dir.service("svc", runner + "[give_up_when]\noutput_matches = \"" + long_pattern() + "\"\n");
    json reply = client.command("reload", 10s);
    CHECK(reply["ok"] == false);
    CHECK(reply["error"]["code"] == "invalid_config");
    const std::string message = reply["error"]["message"].get<std::string>();
    CHECK_MESSAGE(message.find("services/svc.toml:5:18: error: give_up_when.output_matches: "
                               "invalid regular expression: too long (100000 bytes, at most "
                               "4096)") != std::string::npos,
                  message.substr(0, 2000));

    json pong = client.command("ping", 5s);
    CHECK_MESSAGE(pong["ok"] == true, pong.dump());
    json now = status(client, "svc");
    CHECK(now["state"] == "running");
    CHECK(now["pid"] == before["pid"]);
    CHECK(now["run"] == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("output_matches searches the first 2 KiB of a line, as pkit.toml(5) says") {
    TempDir dir;
    std::string line(4000, '.');
    std::string past = line;
    past.replace(2044, 5, "FATAL");  // its last byte is the 2049th
    std::string within = line;
    within.replace(2043, 5, "FATAL");  // its last byte is the 2048th
    write_file(dir.file("past"), past + "\n");
    write_file(dir.file("within"), within + "\n");
    // Under on_crash, a run that matched ends supervision; one that did not restarts.
    dir.service("past", printer(dir.file("past"), "FATAL", "on_crash"));
    dir.service("within", printer(dir.file("within"), "FATAL", "on_crash"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json hit = wait_status(client, "within", state_is("failed"), 10s, "within ends");
    CHECK(hit["stopped"] == "predicate");
    CHECK(hit["run"] == 1);
    json miss = wait_status(
        client, "past", [](const json& s) { return s.value("run", 0) >= 3; }, 10s, "past restarts");
    CHECK(miss["state"] != "failed");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("a too complex output_matches is a positioned error of pkitd --check") {
    TempDir dir;
    dir.service("svc", sh_command("exit 0") + "[give_up_when]\noutput_matches = 'a{1000}b'\n");
    CommandResult r = run_pkitd({"--check", "--config", dir.str()}, 10s);
    INFO(r.all());
    CHECK(r.exit_code == 2);
    CHECK(r.all().find("services/svc.toml:3:18: error: give_up_when.output_matches: invalid "
                       "regular expression: too complex (1005 RE2 instructions, at most 250)") !=
          std::string::npos);
}
