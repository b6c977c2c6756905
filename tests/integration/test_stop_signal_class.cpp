// A stop-class stop signal (SPEC §7): with `[stop] signal = "SIGTSTP"` (or SIGTTIN,
// SIGTTOU) SIGCONT goes first, since arriving after it SIGCONT would discard the
// pending signal: the run's handler would never run and the run would be SIGKILLed at
// stop.timeout.

#include <signal.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

TEST_CASE("a run whose stop signal is SIGTSTP handles it and exits 0 on pkitctl stop") {
    TempDir dir;
    const std::string armed = dir.file("armed");
    // sh runs the trap once its current sleep ends. The sleeps get SIGTSTP too, and
    // ignore it: a run's process group is orphaned (it is a session of its own).
    dir.service("svc",
                sh_command("trap 'exit 0' TSTP; touch " + armed + "; while :; do sleep 0.1; done") +
                    "[stop]\nsignal = \"SIGTSTP\"\ntimeout = \"3s\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_file(armed);
    const json running = wait_status(client, "svc", state_is("running"), 10s, "svc runs");
    const pid_t pid = running["pid"].get<pid_t>();

    SUBCASE("a running run") {}
    SUBCASE("a run stopped by SIGSTOP, which could not take the signal before SIGCONT") {
        REQUIRE(::kill(pid, SIGSTOP) == 0);
        wait_for([&] { return proc_info(pid).value_or(ProcInfo{}).state == 'T'; }, 5s,
                 "the run is stopped");
    }

    const auto result = run_ctl({"--socket", pkitd.socket(), "stop", "svc"});
    CHECK_MESSAGE(result.exit_code == 0, result.all());
    const json s = wait_status(client, "svc", state_is("stopped"), 10s, "svc stopped");
    CHECK(last_exit(s)["code"] == 0);
    CHECK(last_exit(s)["signal"].is_null());
    CHECK(pkitd.stop() == 0);
}
