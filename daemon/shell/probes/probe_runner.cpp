#include "daemon/shell/probes/probe_runner.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <utility>

#include "config/variables.hpp"
#include "daemon/shell/launch/launcher.hpp"
#include "daemon/shell/probes/probe_attempt.hpp"

namespace pkit::shell {

namespace {

using namespace std::chrono_literals;

// Big enough that a chatty probe is drained in few reads.
constexpr std::size_t k_scratch_size = 16 * 1024;

// An attempt that only reports why it could not run.
class FailedAttempt final : public ProbeAttempt {
public:
    FailedAttempt(ProbeRunner& runner, const ProbeRequest& request, std::string reason)
        : ProbeAttempt(runner, request), m_reason(std::move(reason)) {}

private:
    void begin() override { complete(false, std::move(m_reason)); }

    std::string m_reason;
};

}  // namespace

// --- ProbeAttempt ------------------------------------------------------------------

ProbeAttempt::ProbeAttempt(ProbeRunner& runner, const ProbeRequest& request)
    : m_runner(runner),
      m_service(request.service),
      m_run(request.run),
      m_purpose(request.purpose),
      m_timeout(request.timeout > config::Duration::zero() ? request.timeout
                                                           : config::Duration(1s)),
      m_timer(runner.m_loop) {}

void ProbeAttempt::start() {
    auto timeout_ms = std::max<std::int64_t>(
        1, std::chrono::duration_cast<std::chrono::milliseconds>(m_timeout).count());
    m_timer.start(static_cast<std::uint64_t>(timeout_ms), [this] {
        guarded([this] { complete(false, "timed out after " + format_probe_duration(m_timeout)); });
    });
    m_starting = true;
    begin();
    // begin() may have completed: then the timer now holds the deferred delivery and
    // this object is still alive (complete() did not destroy it while starting).
    m_starting = false;
}

void ProbeAttempt::complete(bool ok, std::string detail) {
    if (m_completed) {
        return;
    }
    m_completed = true;
    if (m_starting) {
        m_timer.start(0, [this, ok, detail = std::move(detail)]() mutable {
            guarded([&] { m_runner.finish(this, ok, std::move(detail)); });
        });
        return;
    }
    m_timer.stop();
    m_runner.finish(this, ok, std::move(detail));
}

std::unique_ptr<ProbeAttempt> make_failed_attempt(ProbeRunner& runner, const ProbeRequest& request,
                                                  std::string reason) {
    return std::make_unique<FailedAttempt>(runner, request, std::move(reason));
}

// --- ProbeRunner -------------------------------------------------------------------

ProbeRunner::ProbeRunner(uv_loop_t* loop, Callback callback)
    : m_loop(loop), m_callback(std::move(callback)) {}

ProbeRunner::~ProbeRunner() {
    // Destroy one by one: an attempt's destructor may adopt its pid.
    while (!m_attempts.empty()) {
        m_attempts.pop_back();
    }
}

namespace {

// The attempt of `request`'s kind.
std::unique_ptr<ProbeAttempt> make_attempt(ProbeRunner& runner, const ProbeRequest& request) {
    using config::ProbeKind;
    switch (request.probe != nullptr ? request.probe->kind : ProbeKind::none) {
        case ProbeKind::exec:
            return make_exec_attempt(runner, request);
        case ProbeKind::tcp:
            return make_tcp_attempt(runner, request);
        case ProbeKind::http:
            return make_http_attempt(runner, request);
        case ProbeKind::file:
            return make_file_attempt(runner, request);
        case ProbeKind::watchdog:
            return make_failed_attempt(runner, request, "a watchdog is fed, not probed");
        case ProbeKind::none:
            break;
    }
    return make_failed_attempt(runner, request, "no probe configured");
}

// A tcp, http or file target with variables, expanded now in the run's environment
// into `expanded` (SPEC §13); the launcher's failure message when it cannot be.
std::optional<std::string> expand_target(const ProbeRequest& request, config::ProbeSpec& expanded) {
    const config::ProbeSpec* probe = request.probe;
    if (probe == nullptr || probe->kind == config::ProbeKind::exec ||
        request.service_spec == nullptr || !config::has_variables(probe->target)) {
        return std::nullopt;
    }
    LaunchRequest launch{request.service_spec, request.run, {}, {}, request.daemon};
    auto target = expand_in_run_environment(launch, probe->target, "target");
    if (!target) {
        return std::move(target.error().message);
    }
    expanded = *probe;
    expanded.target = std::move(*target);
    return std::nullopt;
}

}  // namespace

void ProbeRunner::run(const ProbeRequest& given) {
    // The attempt copies what it needs of `expanded` while it is made.
    ProbeRequest request = given;
    config::ProbeSpec expanded;
    std::unique_ptr<ProbeAttempt> attempt;
    if (auto failure = expand_target(given, expanded)) {
        attempt = make_failed_attempt(*this, request, std::move(*failure));
    } else {
        if (expanded.enabled()) {
            request.probe = &expanded;
        }
        attempt = make_attempt(*this, request);
    }
    ProbeAttempt* started = attempt.get();
    m_attempts.push_back(std::move(attempt));
    started->start();
}

bool ProbeRunner::on_child_exit(pid_t pid, int wait_status) {
    if (pid <= 0) {
        return false;
    }
    auto unreaped = std::find(m_unreaped.begin(), m_unreaped.end(), pid);
    if (unreaped != m_unreaped.end()) {
        m_unreaped.erase(unreaped);
        // Its group was killed already; anything forked since goes the same way.
        kill(-pid, SIGKILL);
        return true;
    }
    for (auto& attempt : m_attempts) {
        if (attempt->pid() == pid) {
            attempt->on_exit(wait_status);  // completes and destroys the attempt
            return true;
        }
    }
    return false;
}

void ProbeRunner::cancel(std::size_t service) {
    std::vector<std::unique_ptr<ProbeAttempt>> dropped;
    auto keep =
        std::stable_partition(m_attempts.begin(), m_attempts.end(),
                              [&](const auto& attempt) { return attempt->service() != service; });
    std::move(keep, m_attempts.end(), std::back_inserter(dropped));
    m_attempts.erase(keep, m_attempts.end());
    // `dropped` goes out of scope here: destructors close handles and kill groups.
}

void ProbeRunner::finish(ProbeAttempt* attempt, bool ok, std::string detail) {
    auto found = std::find_if(m_attempts.begin(), m_attempts.end(),
                              [&](const auto& owned) { return owned.get() == attempt; });
    if (found == m_attempts.end()) {
        return;
    }
    std::unique_ptr<ProbeAttempt> owned = std::move(*found);
    m_attempts.erase(found);
    std::size_t service = owned->service();
    std::uint64_t run = owned->run();
    core::ProbePurpose purpose = owned->purpose();
    // Destroyed before the callback, so that a callback that runs a new attempt or
    // cancels the service sees a consistent runner.
    owned.reset();
    if (m_callback) {
        guarded([&] { m_callback(service, run, purpose, ok, std::move(detail)); });
    }
}

uv_buf_t ProbeRunner::scratch() {
    if (!m_scratch) {
        m_scratch = std::make_unique_for_overwrite<char[]>(k_scratch_size);
    }
    return uv_buf_init(m_scratch.get(), static_cast<unsigned>(k_scratch_size));
}

std::string format_probe_duration(config::Duration duration) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(duration).count();
    if (ms < 1000) {
        return std::to_string(ms) + "ms";
    }
    if (ms % 60000 == 0) {
        return std::to_string(ms / 60000) + "m";
    }
    if (ms % 1000 == 0 || ms >= 10000) {
        return std::to_string((ms + 500) / 1000) + "s";
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.1fs", static_cast<double>(ms) / 1000.0);
    return text;
}

}  // namespace pkit::shell
