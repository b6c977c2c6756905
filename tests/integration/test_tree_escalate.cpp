// A root-level service with `escalate = true` that fails (SPEC §6): pkitd emits
// escalated, stops every other service and exits 1 with every child gone; the same as
// PID 1 of a new PID namespace (root and util-linux unshare only).

#include <signal.h>

#include <algorithm>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// `boss` (escalate, policy never) waits for DIR/go, then exits 3. `bystander` and the
// group g's member `member` run until stopped; `stubborn` ignores SIGTERM and needs
// its 1 s stop timeout.
void write_tree(const TempDir& dir) {
    dir.daemon_config("[groups.g]\nmembers = [\"member\"]\n");
    dir.service("boss", "escalate = true\n" + sh_command(gate(dir) + "exit 3") +
                            "[restart]\npolicy = \"never\"\n[stop]\ntimeout = \"1s\"\n");
    const std::string stop = "[stop]\ntimeout = \"1s\"\n";
    dir.service("bystander", sh_command("exec sleep 1000") + stop);
    dir.service("member", sh_command("exec sleep 1000") + stop);
    dir.service("stubborn", sh_command("trap '' TERM; touch " + dir.file("armed") +
                                       "; while :; do sleep 0.05; done") +
                                stop);
}

}  // namespace

TEST_CASE("a root-level escalate service that fails escalates and pkitd exits 1") {
    TempDir dir;
    write_tree(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    for (const std::string name : {"boss", "bystander", "member", "stubborn"}) {
        wait_status(client, name, state_is("running"), 10s, name + " runs");
    }
    wait_file(dir.file("armed"));
    EventStream events(pkitd.socket());

    const auto start = Clock::now();
    open_gate(dir);
    json escalated =
        events.until([](const json& e) { return e["type"] == "escalated"; }, 5s, "escalated");
    CHECK(escalated["service"].is_null());
    CHECK(events.of_type("group_failed").empty());
    // stubborn ignores SIGTERM: its 1 s stop timeout bounds the shutdown.
    CHECK(pkitd.wait_exit(8s) == 1);
    CHECK(seconds_since(start) < 6.0);
    const auto left = marker_processes(pkitd.marker());
    CHECK_MESSAGE(left.empty(), "left behind:" << describe(left));
    CHECK(pkitd.log().find("escalat") != std::string::npos);
}

TEST_CASE("as PID 1 of a namespace a root-level escalate failure exits 1 with every child gone") {
    const std::string reason = pid_namespace_unavailable();
    if (!reason.empty()) {
        PKIT_SKIP(reason);
    }
    TempDir dir;
    write_tree(dir);
    Daemon pkitd(dir, {.wrapper = pid_namespace_wrapper()});
    pkitd.wait_ready();
    Client client = pkitd.client();
    CHECK(client.command("ping")["result"]["pid"] == 1);
    for (const std::string name : {"boss", "bystander", "member", "stubborn"}) {
        wait_status(client, name, state_is("running"), 10s, name + " runs");
    }
    wait_file(dir.file("armed"));
    const pid_t init = pkitd.target_pid();
    REQUIRE(init != pkitd.pid());
    CHECK(descendants_of(init).size() >= 4);
    EventStream events(pkitd.socket());

    const auto start = Clock::now();
    open_gate(dir);
    events.until([](const json& e) { return e["type"] == "escalated"; }, 5s, "escalated");
    // When PID 1 exits the kernel kills what is left of the namespace, so "no child
    // left" alone proves nothing: pkitd itself must have stopped and reaped every
    // service, which its `exited` events show (stubborn needed SIGKILL after 1 s).
    const auto exited = [](const std::string& name) {
        return [name](const json& e) { return e["type"] == "exited" && e["service"] == name; };
    };
    json stubborn = events.until(exited("stubborn"), 8s, "stubborn stopped by pkitd");
    CHECK(stubborn["signal"] == "SIGKILL");
    for (const std::string name : {"bystander", "member"}) {
        const auto& seen = events.seen();
        CHECK_MESSAGE(std::any_of(seen.begin(), seen.end(), exited(name)),
                      name << " was not stopped by pkitd");
    }
    // unshare --fork passes on its child's exit status.
    CHECK(pkitd.wait_exit(8s) == 1);
    CHECK(seconds_since(start) < 6.0);
    const auto left = marker_processes(pkitd.marker());
    CHECK_MESSAGE(left.empty(), "left behind:" << describe(left));
}
