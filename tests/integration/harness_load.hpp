#pragma once
// Clients of a service's own port on 127.0.0.1, for the cases of [[listen]] sockets
// and restarts without downtime.

#include <atomic>
#include <functional>
#include <thread>

namespace pkit::itest {

// A connected TCP socket to 127.0.0.1:port with a 10 s receive timeout, or -1.
int connect_loopback(int port);

// One `GET /` of 127.0.0.1:port on a fresh connection: true when the answer is a 200
// whose body is "ok" (the test servers' and gunicorn test application's answer).
bool get_ok(int port);

// Calls `request` without pause on a thread of its own, counting the calls that
// returned true (served) and false (failed), until stop().
class SteadyClient {
public:
    explicit SteadyClient(std::function<bool()> request);
    ~SteadyClient();
    SteadyClient(const SteadyClient&) = delete;
    SteadyClient& operator=(const SteadyClient&) = delete;

    void stop();
    int served() const { return m_served; }
    int failed() const { return m_failed; }

private:
    std::function<bool()> m_request;
    std::atomic<bool> m_stop{false};
    std::atomic<int> m_served{0};
    std::atomic<int> m_failed{0};
    std::thread m_thread;
};

}  // namespace pkit::itest
