// Readiness by the probe kinds besides exec and tcp (SPEC §2 [ready]): an `http` probe
// makes the run ready only once the URL answers 2xx/3xx (a 404 is not ready), a `file`
// probe only once the file's mtime is newer than 2 × interval (a stale file is not).

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// Polls for `window` that the service stays starting and not ready, with no ready
// event among those streamed meanwhile.
void stays_starting(Client& client, EventStream& events, std::chrono::milliseconds window) {
    const auto deadline = Clock::now() + window;
    while (Clock::now() < deadline) {
        json s = status(client, "svc");
        REQUIRE_MESSAGE(s["state"] == "starting", s.dump());
        REQUIRE(s["ready"] == false);
        events.collect_until(Clock::now() + 50ms);
    }
    for (const auto& e : events.seen()) {
        REQUIRE_MESSAGE(!is_event(e, "ready", "svc"), e.dump());
    }
}

}  // namespace

TEST_CASE("ready file probe: a stale file is not ready, a freshly touched one is") {
    TempDir dir;
    const std::string ready_file = dir.file("heartbeat");
    // The file exists from the start, modified an hour ago: stale for a 2 × 200ms window.
    write_file(ready_file, "");
    fs::last_write_time(ready_file, fs::file_time_type::clock::now() - std::chrono::hours(1));
    // Once the gate opens, the service touches it every 100ms.
    dir.service("svc",
                sh_command(gate(dir) + "while :; do touch " + ready_file + "; sleep 0.1; done") +
                    "[ready]\nfile = " + toml_str(ready_file) +
                    "\ninterval = \"200ms\"\ntimeout = \"60s\"\n[stop]\ntimeout = "
                    "\"1s\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    EventStream events(pkitd.socket());
    wait_status(client, "svc", run_at_least(1), 10s, "run 1 launched");
    // Five probe intervals with a stale file: still starting.
    stays_starting(client, events, 1s);

    const double opened = unix_now();
    open_gate(dir);
    json ready = events.until([](const json& e) { return is_event(e, "ready", "svc"); }, 10s,
                              "ready once the file is fresh");
    CHECK(ready["at"].get<double>() >= opened);
    json s = wait_status(client, "svc", state_is("running"), 5s, "running");
    CHECK(s["ready"] == true);
    CHECK(s["run"] == 1);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ready file probe: a missing file is not ready, its creation makes the run ready") {
    TempDir dir;
    const std::string ready_file = dir.file("created");
    dir.service("svc", sh_command("exec sleep 1000") + "[ready]\nfile = " + toml_str(ready_file) +
                           "\ninterval = \"500ms\"\ntimeout = \"60s\"\n[stop]\ntimeout = "
                           "\"1s\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    EventStream events(pkitd.socket());
    wait_status(client, "svc", run_at_least(1), 10s, "run 1 launched");
    stays_starting(client, events, 1500ms);

    // Fresh for 2 × 500ms: the next attempt (within 500ms) sees it. Touched again on each
    // poll, so that a probe a loaded machine delays past the window still finds it fresh.
    const double created = unix_now();
    write_file(ready_file, "");
    wait_for(
        [&] {
            touch(ready_file);
            return status(client, "svc")["ready"] == true;
        },
        10s, "svc ready once the file exists");
    json ready = events.until([](const json& e) { return is_event(e, "ready", "svc"); }, 10s,
                              "the ready event");
    CHECK(ready["at"].get<double>() >= created);
    CHECK(status(client, "svc")["state"] == "running");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ready http probe: 404 is not ready, the run is ready once the URL answers 200") {
    const std::string python = python3();
    if (python.empty()) {
        PKIT_SKIP("python3 is not installed");
    }
    TempDir dir;
    const int port = unused_port();
    const std::string www = dir.file("www");
    fs::create_directories(www);
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/ready.txt";
    dir.service("svc", "command = " +
                           toml_array({python, "-m", "http.server", std::to_string(port), "--bind",
                                       "127.0.0.1", "--directory", www}) +
                           "\n[ready]\nhttp = " + toml_str(url) +
                           "\ninterval = \"100ms\"\ntimeout = \"60s\"\n[stop]\ntimeout = "
                           "\"2s\"\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    EventStream events(pkitd.socket());

    // The server logs each request on stderr: three 404s prove it answers, and the run
    // is still not ready.
    auto not_found_lines = [&] {
        json logs = client.request({{"cmd", "logs"}, {"service", "svc"}});
        std::size_t n = 0;
        for (const auto& line : texts(logs["result"])) {
            n += line.find("\" 404 ") != std::string::npos ? 1 : 0;
        }
        return n;
    };
    wait_for([&] { return not_found_lines() >= 3; }, 20s, "three 404 answers to the probe",
             [&] { return std::to_string(not_found_lines()); });
    stays_starting(client, events, 500ms);

    const double served = unix_now();
    write_file(fs::path(www) / "ready.txt", "ok\n");
    json ready = events.until([](const json& e) { return is_event(e, "ready", "svc"); }, 10s,
                              "ready once the URL answers 200");
    CHECK(ready["at"].get<double>() >= served);
    json s = wait_status(client, "svc", state_is("running"), 5s, "running");
    CHECK(s["ready"] == true);
    CHECK(s["run"] == 1);
    CHECK(pkitd.stop() == 0);
}
