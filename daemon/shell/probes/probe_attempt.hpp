#pragma once
// Internal to the probe runner: one attempt of one probe, and a factory per kind.
//
// Lifetime rule: an attempt ends by calling complete() exactly once, which destroys it
// (the runner owns it), so the caller must return right after without touching
// members. libuv requests (getaddrinfo, connect, write, fs) may outlive their attempt:
// they are heap-allocated on their own and their callbacks free them; the attempt's
// destructor only clears their `data` so a late callback finds nothing to report to.

#include <sys/types.h>
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "daemon/shell/probes/probe_runner.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

class ProbeAttempt {
public:
    ProbeAttempt(ProbeRunner& runner, const ProbeRequest& request);
    virtual ~ProbeAttempt() = default;

    ProbeAttempt(const ProbeAttempt&) = delete;
    ProbeAttempt& operator=(const ProbeAttempt&) = delete;

    // Arms the deadline, then runs begin(). A result reached during begin() is
    // delivered on the next loop iteration instead, so run() never calls back.
    void start();

    // The main pid of an exec probe still running, else -1.
    virtual pid_t pid() const { return -1; }
    // The reaper reaped pid(): an exec probe delivers its result.
    virtual void on_exit(int /*wait_status*/) {}

    std::size_t service() const { return m_service; }
    std::uint64_t run() const { return m_run; }
    core::ProbePurpose purpose() const { return m_purpose; }

protected:
    // Starts the kind's work; may call complete().
    virtual void begin() = 0;

    // Delivers the result and destroys this attempt (see the lifetime rule above). Only
    // the first call counts.
    void complete(bool ok, std::string detail);

    uv_loop_t* loop() const { return m_runner.m_loop; }
    ProbeRunner& runner() const { return m_runner; }
    config::Duration timeout() const { return m_timeout; }
    void adopt_unreaped(pid_t pid) { m_runner.adopt_unreaped(pid); }
    uv_buf_t scratch() { return m_runner.scratch(); }

private:
    ProbeRunner& m_runner;
    std::size_t m_service;
    std::uint64_t m_run;
    core::ProbePurpose m_purpose;
    config::Duration m_timeout;
    bool m_starting = false;
    // Set by the first complete(): later results (a deferred one is pending) are ignored.
    bool m_completed = false;
    // The deadline; reused as the zero-delay timer of a result reached in begin().
    Timer m_timer;
};

// A ready-to-start attempt for the request's probe kind. A kind that cannot run here
// (watchdog, none) gives an attempt that fails with a reason.
std::unique_ptr<ProbeAttempt> make_exec_attempt(ProbeRunner& runner, const ProbeRequest& request);
std::unique_ptr<ProbeAttempt> make_tcp_attempt(ProbeRunner& runner, const ProbeRequest& request);
std::unique_ptr<ProbeAttempt> make_http_attempt(ProbeRunner& runner, const ProbeRequest& request);
std::unique_ptr<ProbeAttempt> make_file_attempt(ProbeRunner& runner, const ProbeRequest& request);
std::unique_ptr<ProbeAttempt> make_failed_attempt(ProbeRunner& runner, const ProbeRequest& request,
                                                  std::string reason);

// Runs `body`, swallowing any exception: nothing may unwind into libuv.
template <typename Body>
void guarded(Body&& body) noexcept {
    try {
        body();
    } catch (...) {
    }
}

}  // namespace pkit::shell
