#pragma once
// Runs readiness and liveness probe attempts (SPEC §2 [health]/[ready], §3 probes) for
// the functional core. The core decides when to probe and what a result means; this
// runner only performs one attempt per request and reports ok/failed with a short
// human reason. Nothing here blocks the loop: exec probes are cloned children reaped
// through the daemon's Reaper, tcp and http probes are libuv sockets with names
// resolved on libuv's thread pool, and file probes stat through uv_fs_stat.
//
// Memory: an idle runner holds no per-service state; each attempt allocates its own
// small object, freed when its result is delivered or it is cancelled.

#include <sys/types.h>
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/model.hpp"
#include "daemon/core/types.hpp"

namespace pkit::shell {

class ProbeAttempt;

struct ProbeRequest {
    std::size_t service = 0;
    std::uint64_t run = 0;
    core::ProbePurpose purpose = core::ProbePurpose::health;
    // What to run (exec/tcp/http/file). Read during run() only: the attempt copies what
    // it needs, so a reload may replace the spec while the attempt is in flight.
    const config::ProbeSpec* probe = nullptr;
    // Environment, cwd, user and group for exec probes; nullptr runs with pkitd's own.
    const config::ServiceSpec* service_spec = nullptr;
    // The deadline of this attempt; a non-positive value falls back to SPEC's 1 s, so
    // no attempt can run unbounded.
    config::Duration timeout{};
    // pkitd.toml's env and env_file, for the probe's environment and the variables of
    // its target (SPEC §13); nullptr: none.
    const config::DaemonSpec* daemon = nullptr;
};

class ProbeRunner {
public:
    // One attempt's result. `detail` is a short reason for logs and `explain`:
    // "connection refused", "HTTP 503", "exit 1", "timed out after 1s",
    // "stale: modified 12s ago". Must not destroy the runner; may call run() or
    // cancel(). An exception it throws is swallowed.
    using Callback = std::function<void(std::size_t service, std::uint64_t run,
                                        core::ProbePurpose purpose, bool ok, std::string detail)>;

    ProbeRunner(uv_loop_t* loop, Callback callback);
    // Cancels every attempt in flight (exec probes' groups get SIGKILL). Their pids
    // are then no longer recognised: the daemon's reaper reaps them as unknown.
    ~ProbeRunner();

    ProbeRunner(const ProbeRunner&) = delete;
    ProbeRunner& operator=(const ProbeRunner&) = delete;

    // Starts one attempt. The result always comes later through the callback, from
    // the loop (never from inside run()), exactly once per attempt unless cancelled.
    // Exec probes are cloned here (the launcher waits for the exec, as for runs); a
    // launch failure is a failed attempt with the launcher's message as detail.
    void run(const ProbeRequest& request);

    // The reaper offers every reaped pid here first. Returns true if it was the main
    // process of an exec probe (its result is delivered now, from this call) or of a
    // probe already timed out or cancelled (swallowed). In both cases whatever is left
    // of the probe's process group is killed, so no probe outlives its attempt.
    bool on_child_exit(pid_t pid, int wait_status);

    // The service's run ended: drops its attempts in flight without a callback and
    // kills exec probes' process groups.
    void cancel(std::size_t service);

    // Attempts whose result is still due.
    std::size_t in_flight() const { return m_attempts.size(); }

    // Exec probes killed (timed out or cancelled) whose main process has not been
    // reaped yet; on_child_exit still claims them.
    std::size_t unreaped() const { return m_unreaped.size(); }

private:
    friend class ProbeAttempt;

    // Called by an attempt exactly once: destroys it, then delivers the result.
    void finish(ProbeAttempt* attempt, bool ok, std::string detail);
    // Remembers a killed exec probe's pid until the reaper offers it.
    void adopt_unreaped(pid_t pid) { m_unreaped.push_back(pid); }
    // A scratch buffer for output nobody reads (exec probes' stdout/stderr).
    uv_buf_t scratch();

    uv_loop_t* m_loop;
    Callback m_callback;
    std::vector<std::unique_ptr<ProbeAttempt>> m_attempts;
    std::vector<pid_t> m_unreaped;
    std::unique_ptr<char[]> m_scratch;
};

// "1s", "250ms", "1.5s", "2m": a duration in the short form used in details.
std::string format_probe_duration(config::Duration duration);

}  // namespace pkit::shell
