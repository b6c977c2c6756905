// PID 1 for real (SPEC §1 "Signals and PID 1"): pkitd as the init of a new PID
// namespace reaps every orphan, leaves no zombie, and exits 0 on SIGTERM. Needs root
// and util-linux unshare; skipped with the reason elsewhere.

#include <signal.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

TEST_CASE("as PID 1 of a namespace pkitd reaps 50 double-forked orphans and exits 0") {
    const std::string reason = pid_namespace_unavailable();
    if (!reason.empty()) {
        PKIT_SKIP(reason);
    }
    TempDir dir;
    dir.service("forker", sh_command("for i in $(seq 50); do (sleep 0.2 &); done; touch " +
                                     dir.file("forked") + "; sleep 1000"));
    Daemon pkitd(dir, {.wrapper = pid_namespace_wrapper()});
    pkitd.wait_ready();
    Client client = pkitd.client();

    json ping = client.command("ping");
    CHECK(ping["result"]["pid"] == 1);
    wait_file(dir.file("forked"));
    wait_for([&] { return daemon_status(client).value("orphans_reaped", 0) >= 50; }, 10s,
             "50 orphans reaped", [&] { return daemon_status(client).dump(); });

    // Every process of the namespace descends from unshare's child, pkitd.
    const pid_t init = pkitd.target_pid();
    REQUIRE(init != pkitd.pid());
    wait_for([&] { return zombies_among(descendants_of(init)).empty(); }, 5s,
             "no zombie in the namespace", [&] { return describe(descendants_of(init)); });
    CHECK(descendants_of(init).size() <= 2);  // the forker's shell and its sleep

    pkitd.signal(SIGTERM);
    CHECK(pkitd.wait_exit(15s) == 0);
    const auto left = marker_processes(pkitd.marker());
    CHECK_MESSAGE(left.empty(), "left behind:" << describe(left));
}
