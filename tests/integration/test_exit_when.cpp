// exit_when = "all_done" (SPEC §12): pkitd as a job container ends once nothing can
// change without an operator: 0 when every job ended done, 1 when one failed (its
// dependents left waiting); also as PID 1 of a PID namespace.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// A migration, then a seed job after it; both wait at the gate so the test sees them
// running before pkitd ends.
void jobs(const TempDir& dir, int seed_exit) {
    dir.daemon_config("exit_when = \"all_done\"\n");
    dir.service("migrate", "type = \"oneshot\"\n" + sh_command(gate(dir) + "exit 0"));
    dir.service("seed", "type = \"oneshot\"\nafter = [\"migrate\"]\n" +
                            sh_command("exit " + std::to_string(seed_exit)) +
                            "[restart]\npolicy = \"never\"\n");
    dir.service("report", "type = \"oneshot\"\nafter = [\"seed\"]\n" + sh_command("exit 0"));
}

}  // namespace

TEST_CASE("exit_when all_done: every job done, pkitd exits 0") {
    TempDir dir;
    jobs(dir, 0);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    // Its launch may still be in flight just after pkitd is ready: polled.
    wait_status(client, "migrate", state_is("running"), 10s, "migrate runs");
    CHECK(status(client, "report")["state"] == "waiting");
    open_gate(dir);
    auto code = pkitd.wait_exit(15s);
    REQUIRE_MESSAGE(code.has_value(), "pkitd still runs; its log:\n" << pkitd.log());
    CHECK(*code == 0);
    CHECK_MESSAGE(pkitd.log().find("exit_when = \"all_done\"") != std::string::npos, pkitd.log());
}

TEST_CASE("exit_when all_done: a job failed and its dependent waits, pkitd exits 1") {
    TempDir dir;
    jobs(dir, 3);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    open_gate(dir);
    auto code = pkitd.wait_exit(15s);
    REQUIRE_MESSAGE(code.has_value(), "pkitd still runs; its log:\n" << pkitd.log());
    CHECK(*code == 1);
}

TEST_CASE("exit_when all_done: a long-running service keeps pkitd up") {
    TempDir dir;
    dir.daemon_config("exit_when = \"all_done\"\n");
    dir.service("job", "type = \"oneshot\"\n" + sh_command("exit 0"));
    dir.service("web", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "job", state_is("done"), 10s, "the job is done");
    CHECK_FALSE(pkitd.wait_exit(300ms).has_value());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("exit_when all_done as PID 1 of a namespace: exit 0, and 1 after a failure") {
    const std::string reason = pid_namespace_unavailable();
    if (!reason.empty()) {
        PKIT_SKIP(reason);
    }
    for (int seed_exit : {0, 3}) {
        CAPTURE(seed_exit);
        TempDir dir;
        jobs(dir, seed_exit);
        Daemon pkitd(dir, {.wrapper = pid_namespace_wrapper()});
        pkitd.wait_ready();
        Client client = pkitd.client();
        CHECK(client.command("ping")["result"]["pid"] == 1);
        open_gate(dir);
        auto code = pkitd.wait_exit(15s);
        REQUIRE_MESSAGE(code.has_value(), "pkitd still runs; its log:\n" << pkitd.log());
        CHECK(*code == (seed_exit == 0 ? 0 : 1));
    }
}
