// `pkitctl wait` (SPEC §9, §10): blocks until every named service has reached the
// condition; exit 3 as soon as one cannot reach it or `within` runs out. pkitd answers
// from its event flow, not by polling, so it stays idle while a wait is pending.

#include <filesystem>
#include <iterator>
#include <thread>

#include "tests/integration/harness.hpp"
#include "tests/integration/harness_switches.hpp"

using namespace pkit::itest;

namespace {

// A service that becomes ready (its file probe sees DIR/up) about 1 s after it starts:
// from then on it touches DIR/up every 100ms (a file probe passes only while the file is
// newer than 2 × interval: touched once, a loaded pkitd's probe may find it stale).
void slow_ready_service(const TempDir& dir) {
    dir.service("web",
                sh_command("sleep 1; while :; do touch " + dir.file("up") + "; sleep 0.1; done") +
                    "[ready]\nfile = " + toml_str(dir.file("up")) + "\ninterval = \"200ms\"\n");
}

// web waits for `dep`, which does not start by itself: web stays `waiting`.
void stuck_service(const TempDir& dir) {
    dir.service("dep", "autostart = false\n" + sh_command("exec sleep 1000"));
    dir.service("web", "after = [\"dep\"]\n" + sh_command("exec sleep 1000"));
}

}  // namespace

TEST_CASE("pkitctl wait returns once the service is ready") {
    TempDir dir;
    slow_ready_service(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    EventStream events(pkitd.socket());
    Client client = pkitd.client();

    const auto result = run_ctl({"--socket", pkitd.socket(), "wait", "web"});
    const double returned_at = unix_now();
    REQUIRE_MESSAGE(result.exit_code == 0, result.all());
    CHECK(result.out.find("web") != std::string::npos);
    json s = status(client, "web");
    CHECK(s["state"] == "running");
    CHECK(s["ready"] == true);
    json ready =
        events.until([](const json& e) { return e["type"] == "ready" && e["service"] == "web"; },
                     5s, "the ready event");
    // A figure for the report, not an assertion: from the ready event to pkitctl's exit.
    MESSAGE("wait latency from the ready event to pkitctl's exit: "
            << (returned_at - ready["at"].get<double>()) * 1000 << " ms");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pkitctl wait --for done returns once a oneshot job is done") {
    TempDir dir;
    dir.service("job", "type = \"oneshot\"\n" + sh_command("sleep 1"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    const auto result =
        run_ctl({"--socket", pkitd.socket(), "--json", "wait", "--for", "done", "job"});
    REQUIRE_MESSAGE(result.exit_code == 0, result.all());
    json reply = json::parse(result.out);
    CHECK(reply["services"][0]["state"] == "done");
    CHECK(status(client, "job")["state"] == "done");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pkitctl wait exits 3 at once when the waited service ends failed") {
    TempDir dir;
    // Never ready (its probe file never appears), and it fails for good after 1 s.
    dir.service("web", sh_command("sleep 1; exit 1") + "[ready]\nfile = " +
                           toml_str(dir.file("never")) + "\n[restart]\nmax_restarts = 0\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    const auto start = Clock::now();
    const auto result = run_ctl({"--socket", pkitd.socket(), "wait", "--within", "60s", "web"});
    const double took = seconds_since(start);
    INFO(result.all());
    CHECK(result.exit_code == 3);
    CHECK(result.err.find("not_reached") != std::string::npos);
    CHECK(result.err.find("web is failed") != std::string::npos);
    CHECK(took < 30.0);  // liveness only: far below `within`
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pkitctl wait --within 1s on a service stuck waiting exits 3 after about 1 s") {
    TempDir dir;
    stuck_service(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("waiting"), 5s, "web waits for dep");
    const auto start = Clock::now();
    const auto result = run_ctl({"--socket", pkitd.socket(), "wait", "--within", "1s", "web"});
    const double took = seconds_since(start);
    INFO(result.all());
    CHECK(result.exit_code == 3);
    CHECK(result.err.find("web is waiting, not ready within 1 s") != std::string::npos);
    CHECK(took >= 0.9);
    CHECK(took < 10.0);

    SUBCASE("and exits 3 at once for a stopped service") {
        const auto r = run_ctl({"--socket", pkitd.socket(), "wait", "dep"});
        CHECK(r.exit_code == 3);
        CHECK(r.err.find("dep is stopped") != std::string::npos);
    }
    SUBCASE("--for stopped is reached by a stopped service") {
        const auto r = run_ctl({"--socket", pkitd.socket(), "wait", "--for", "stopped", "dep"});
        CHECK_MESSAGE(r.exit_code == 0, r.all());
    }
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pkitd is woken 0 times in 2 s while a wait with a long within is pending") {
    TempDir dir;
    stuck_service(dir);
    Daemon pkitd(dir);
    pkitd.wait_ready();
    {
        Client client = pkitd.client();
        wait_status(client, "web", state_is("waiting"), 5s, "web waits for dep");
    }
    const pid_t pid = pkitd.target_pid();
    auto open_fds = [pid] {
        std::error_code error;
        auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error);
        return std::distance(it, fs::directory_iterator());
    };
    settle_switches(pid, 300ms, 20s);  // the status connection's close is handled
    const auto fds_before = open_fds();
    BackgroundCtl waiter({"--socket", pkitd.socket(), "wait", "--within", "10m", "web"},
                         dir.file("wait.out"), dir.file("wait.err"));
    // The wait is pending once pkitd has accepted the connection and read the request
    // (pkitctl sends it at once); then pkitd settles.
    wait_for([&] { return open_fds() > fds_before; }, 10s, "pkitd accepts pkitctl's connection",
             [&] {
                 return std::to_string(fds_before) + " -> " + std::to_string(open_fds()) + "; " +
                        read_file(dir.file("wait.err"));
             });
    settle_switches(pid, 500ms, 20s);
    const Switches before = read_switches(pid);
    std::this_thread::sleep_for(2s);
    const Switches after = read_switches(pid);
    INFO("before: " << text_of(before));
    INFO("after:  " << text_of(after));
    REQUIRE_MESSAGE(waiter.running(), read_file(dir.file("wait.err")));
    CHECK(after.total() - before.total() == 0);

    // The pending wait is answered by the event that decides it.
    const auto result = run_ctl({"--socket", pkitd.socket(), "start", "dep"});
    CHECK_MESSAGE(result.exit_code == 0, result.all());
    auto status_code = waiter.wait_exit(10s);
    REQUIRE(status_code.has_value());
    CHECK(*status_code == 0);
    CHECK(pkitd.stop() == 0);
}
