// pkitctl logs for people (SPEC §10): -t prints each line's time, --since leaves older
// lines out, several services interleave by time with a `NAME | ` prefix, and -f
// follows several services at once.

#include <signal.h>

#include <ctime>
#include <regex>
#include <sstream>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

json logs_of(Client& client, const std::string& name) {
    return client.request({{"cmd", "logs"}, {"service", name}})["result"];
}

// "12:03:04.512": `at` in local time, as pkitctl prints it (the same TZ here).
std::string local_clock(double at) {
    const auto whole = static_cast<std::time_t>(at);
    std::tm tm{};
    ::localtime_r(&whole, &tm);
    char text[32];
    std::snprintf(text, sizeof text, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                  std::min(999, static_cast<int>((at - static_cast<double>(whole)) * 1000)));
    return text;
}

}  // namespace

TEST_CASE("ctl logs: -t prints each line's time and --since 2s leaves older lines out") {
    TempDir dir;
    const std::string go = dir.file("go");
    dir.service("svc", sh_command("echo old-line; while [ ! -e " + go +
                                  " ]; do sleep 0.05; done; echo new-line; exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_for([&] { return texts(logs_of(client, "svc")).size() == 1; }, 5s, "the old line");
    const double old_at = logs_of(client, "svc")["lines"][0]["at"].get<double>();

    auto stamped = ctl(pkitd, {"logs", "svc", "-t"});
    CHECK(stamped.exit_code == 0);
    CHECK(stamped.out == local_clock(old_at) + " old-line\n");
    CHECK(ctl(pkitd, {"logs", "svc", "--timestamps"}).out == stamped.out);

    // The old line is more than 2 s old before the new one comes.
    wait_for([&] { return unix_now() - old_at > 2.5; }, 10s, "the old line 2.5 s old");
    write_file(go, "");
    wait_for([&] { return texts(logs_of(client, "svc")).size() == 2; }, 5s, "the new line");

    auto since = ctl(pkitd, {"logs", "svc", "--since", "2s"});
    INFO(since.all());
    CHECK(since.exit_code == 0);
    CHECK(since.out == "new-line\n");
    CHECK(ctl(pkitd, {"logs", "svc", "--since", "1h"}).out == "old-line\nnew-line\n");
    CHECK(ctl(pkitd, {"logs", "svc", "--since", "1h", "-n", "1"}).out == "new-line\n");
    auto bad = ctl(pkitd, {"logs", "svc", "--since", "soon"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("--since") != std::string::npos);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl logs: two services interleave by time with a NAME | prefix") {
    TempDir dir;
    dir.service("p",
                sh_command("echo p1; sleep 0.2; echo p2; sleep 0.2; echo p3; exec sleep 1000"));
    dir.service("queue", sh_command("sleep 0.1; echo q1; sleep 0.2; echo q2; sleep 0.2; echo q3; "
                                    "exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_for(
        [&] {
            return texts(logs_of(client, "p")).size() == 3 &&
                   texts(logs_of(client, "queue")).size() == 3;
        },
        10s, "three lines each");

    // The order expected from the protocol's own times: by `at`, p first on a tie.
    std::vector<std::pair<double, std::string>> merged;
    for (const auto& [name, pad] : {std::pair{"p", "p     | "}, std::pair{"queue", "queue | "}}) {
        const json result = logs_of(client, name);
        for (const auto& line : result["lines"]) {
            merged.emplace_back(line["at"].get<double>(), pad + line["text"].get<std::string>());
        }
    }
    std::stable_sort(merged.begin(), merged.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string expected;
    for (const auto& [at, text] : merged) {
        expected += text + "\n";
    }
    auto both = ctl(pkitd, {"logs", "p", "queue"});
    INFO(both.all());
    CHECK(both.exit_code == 0);
    CHECK(both.out == expected);
    // -n applies to each service.
    auto last = ctl(pkitd, {"logs", "p", "queue", "-n", "1"});
    CHECK((last.out == "p     | p3\nqueue | q3\n" || last.out == "queue | q3\np     | p3\n"));
    // -t after the prefix.
    auto stamped = ctl(pkitd, {"logs", "queue", "p", "-n", "1", "-t"});
    CHECK(std::regex_search(stamped.out,
                            std::regex("(^|\n)p     \\| \\d\\d:\\d\\d:\\d\\d\\.\\d{3} p3\n")));
    auto unknown = ctl(pkitd, {"logs", "p", "nope"});
    CHECK(unknown.exit_code == 1);
    CHECK(unknown.out.empty());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl logs: -f follows two services until both have stopped") {
    TempDir dir;
    dir.service("f1", sh_command("echo f1-a; " + gate(dir) + "echo f1-b; exec sleep 1000"));
    dir.service("f2", sh_command("echo f2-a; " + gate(dir) + "echo f2-b; exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_for(
        [&] {
            return texts(logs_of(client, "f1")).size() == 1 &&
                   texts(logs_of(client, "f2")).size() == 1;
        },
        10s, "the first lines");

    BackgroundCtl follow({"--socket", pkitd.socket(), "logs", "f1", "f2", "-f"}, dir.file("f.out"),
                         dir.file("f.err"));
    const auto shown = [&] { return read_file(dir.file("f.out")) + read_file(dir.file("f.err")); };
    const auto has = [&](const std::string& line) {
        return read_file(dir.file("f.out")).find(line + "\n") != std::string::npos;
    };
    wait_for([&] { return has("f1 | f1-a") && has("f2 | f2-a"); }, 10s, "both tails", shown);
    open_gate(dir);
    wait_for([&] { return has("f1 | f1-b") && has("f2 | f2-b"); }, 10s, "both new lines", shown);
    CHECK(follow.running());

    // One stopped: the other is still followed; both stopped: pkitctl ends by itself.
    REQUIRE(ctl(pkitd, {"stop", "f1"}).exit_code == 0);
    CHECK(follow.running());
    REQUIRE(ctl(pkitd, {"stop", "f2"}).exit_code == 0);
    const auto code = follow.wait_exit(10s);
    INFO(shown());
    REQUIRE_MESSAGE(code.has_value(), "logs -f of two services still running after both stopped");
    CHECK(*code == 0);
    CHECK(read_file(dir.file("f.err")).empty());
    CHECK(pkitd.stop() == 0);
}
