#pragma once
// Shared by the probe tests: a ProbeRunner wired to a Reaper on a real loop, the
// results it delivered, and tiny servers to probe (a raw HTTP responder on a thread,
// a closed port).

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daemon/shell/launch/reaper.hpp"
#include "daemon/shell/probes/probe_runner.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

struct ProbeResult {
    std::size_t service = 0;
    std::uint64_t run = 0;
    core::ProbePurpose purpose = core::ProbePurpose::health;
    bool ok = false;
    std::string detail;
};

// A runner whose exec probes are reaped by a real Reaper, as in pkitd. Records every
// result and whether one was ever delivered from inside run().
class ProbeHarness {
public:
    explicit ProbeHarness(TestLoop& loop);

    // Starts an attempt of `probe` for `service` (run 1, health).
    void run(const config::ProbeSpec& probe, std::size_t service = 0,
             const config::ServiceSpec* spec = nullptr,
             config::Duration timeout = std::chrono::seconds(1));

    // Runs the loop until `count` results arrived and every exec probe was reaped.
    bool wait_results(std::size_t count, std::chrono::milliseconds limit = 20s);

    // The only result, checked to be the only one.
    ProbeResult single();

    TestLoop& loop;
    std::vector<ProbeResult> results;
    bool called_inside_run = false;
    ProbeRunner runner;
    Reaper reaper;

private:
    bool m_in_run = false;
};

config::ProbeSpec probe_of(config::ProbeKind kind, std::string target);
config::ProbeSpec exec_probe(std::vector<std::string> argv);

// A 127.0.0.1 port nothing listens on (bound, then closed again).
int closed_port();

// Accepts connections on 127.0.0.1 on a thread; each gets `response` after the request
// head arrived (or nothing when `response` is empty), then is closed.
class HttpResponder {
public:
    explicit HttpResponder(std::string response);
    ~HttpResponder();
    int port() const { return m_port; }
    // The last request head received, "GET / HTTP/1.1\r\n...".
    std::string last_request();
    int accepted() const { return m_accepted.load(); }

private:
    void serve();

    std::string m_response;
    int m_listen_fd = -1;
    int m_port = 0;
    std::atomic<bool> m_stop{false};
    std::atomic<int> m_accepted{0};
    std::string m_last_request;
    std::atomic<bool> m_request_ready{false};
    std::thread m_thread;
};

// True when no process is left in process group `pgid`.
bool group_gone(pid_t pgid);

// Reads a pid written by a probe into `file`; -1 while it is not there yet.
pid_t read_pid(const std::string& file);

}  // namespace pkit::shell::test
