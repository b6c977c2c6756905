// The Daemon's side of runs: fork/exec, the output pipes, forwarding, the leftovers of
// a run's process group, and the one deadline timer.

#include <signal.h>

#include <algorithm>
#include <cerrno>

#include "daemon/shell/control.hpp"
#include "daemon/shell/daemon.hpp"
#include "daemon/shell/launcher.hpp"
#include "proto/protocol.hpp"

namespace pkit::shell {

void Daemon::spawn(std::size_t service, std::uint64_t run) {
    const core::Service& s = m_supervisor.service(service);
    LaunchRequest request{&s.spec(), run, {}};
    if (auto notify = open_notify(service, run)) {
        request.extra_env.emplace_back("NOTIFY_SOCKET", *notify);
    }
    auto launched = launch(request);
    if (launched && m_notify[service]) {
        m_notify[service]->set_run_pgid(launched->pid);
    }
    if (!launched) {
        m_notify[service].reset();
        core::LaunchFailure failure{launched.error().kind, launched.error().message};
        m_supervisor.on_launch_failed(service, run, failure, now());
        return;
    }
    auto pipes = std::make_unique<RunPipes>(RunPipes{service, run, nullptr, nullptr});
    m_pipes.push_back(std::move(pipes));
    attach_pipes(service, run, launched->stdout_fd, core::Stream::stdout_);
    attach_pipes(service, run, launched->stderr_fd, core::Stream::stderr_);
    m_supervisor.on_spawned(service, run, launched->pid, now());
}

void Daemon::attach_pipes(std::size_t service, std::uint64_t run, int fd, core::Stream stream) {
    RunPipes* pipes = m_pipes.back().get();
    auto& slot = stream == core::Stream::stdout_ ? pipes->out : pipes->err;
    slot = std::make_unique<LineReader>(
        m_loop,
        [this, service, run, stream](std::string_view line) { on_line(service, run, stream, line); },
        [pipes, stream] {
            // Destroying the reader inside its own callback is allowed; the entry itself
            // is swept later, outside any callback of its readers.
            (stream == core::Stream::stdout_ ? pipes->out : pipes->err).reset();
        });
    if (auto started = slot->start(fd); !started) {
        slot.reset();
        log("warning", "cannot read the output of " + m_supervisor.service(service).name() +
                           ": " + uv_strerror(started.error()));
    }
}

void Daemon::on_line(std::size_t service, std::uint64_t run, core::Stream stream,
                     std::string_view text) {
    double wall = now().wall;
    m_supervisor.on_output(service, run, stream, text, wall);
    forward(m_supervisor.service(service), stream, text, wall);
    if (m_control) {
        m_control->publish_line(service, run, stream, text, wall);
    }
}

void Daemon::forward(const core::Service& s, core::Stream stream, std::string_view text,
                     double wall) {
    OutputWriter& writer = stream == core::Stream::stdout_ ? m_stdout : m_stderr;
    switch (s.spec().output.forward) {
        case config::Forward::none:
            return;
        case config::Forward::raw:
            writer.write_line(text);
            return;
        case config::Forward::prefix:
            if (m_options.log_format == LogFormat::json) {
                proto::json line = {{"at", wall},
                                    {"service", s.name()},
                                    {"stream", core::to_string(stream)},
                                    {"text", text}};
                std::string encoded = proto::to_line(line);
                encoded.pop_back();
                writer.write_line(encoded);
            } else {
                std::string line;
                line.reserve(s.name().size() + 3 + text.size());
                line.append(s.name()).append(" | ").append(text);
                writer.write_line(line);
            }
            return;
    }
}

void Daemon::drain_pipes(std::size_t service) {
    for (auto& pipes : m_pipes) {
        if (pipes->service != service) {
            continue;
        }
        if (pipes->out) {
            pipes->out->drain();
        }
        if (pipes->err) {
            pipes->err->drain();
        }
    }
    std::erase_if(m_pipes, [](const auto& p) { return p->done(); });
}

std::optional<std::string> Daemon::open_notify(std::size_t service, std::uint64_t run) {
    const config::ServiceSpec& spec = m_supervisor.service(service).spec();
    m_notify[service].reset();
    if (!spec.ready.notify) {
        return std::nullopt;
    }
    // Next to the control socket: a directory pkitd owns, short enough for sun_path.
    std::string dir = m_options.socket_path.substr(0, m_options.socket_path.rfind('/') + 1);
    std::string path = dir + "notify/" + spec.name + "." + std::to_string(run) + ".sock";
    auto socket = NotifySocket::open(
        m_loop, path,
        [this, service, run](const NotifyMessage& message) {
            m_supervisor.on_notify(service, run, message, now());
            pump();
        },
        notify_owner(spec));
    if (!socket) {
        log("warning", spec.name + ": cannot open its sd_notify socket: " + socket.error());
        return std::nullopt;
    }
    m_notify[service] = std::move(*socket);
    return path;
}

void Daemon::end_run(std::size_t service) {
    m_probes.cancel(service);
    m_notify[service].reset();
}

void Daemon::run_probe(const core::ProbeAction& action) {
    const config::ServiceSpec& spec = m_supervisor.service(action.service).spec();
    const config::ProbeSpec& probe =
        action.purpose == core::ProbePurpose::ready ? spec.ready.probe : spec.health;
    m_probes.run(ProbeRequest{action.service, action.run, action.purpose, &probe, &spec,
                              probe.timeout});
}

void Daemon::on_probe_result(std::size_t service, std::uint64_t run, core::ProbePurpose purpose,
                             bool ok, const std::string& detail) {
    const core::Service& s = m_supervisor.service(service);
    if (!ok && purpose == core::ProbePurpose::health && s.run() == run) {
        log("info", s.name() + ": liveness probe failed: " + detail);
    }
    m_supervisor.on_probe_result(service, run, purpose, ok, now());
    pump();
}

void Daemon::cleanup_group(const core::CleanupGroupAction& action) {
    // Nothing left in the group is the common case: one kill() finds out.
    if (!signal_run(action.pgid, action.signal, true)) {
        return;
    }
    if (action.signal != SIGKILL) {
        signal_run(action.pgid, SIGCONT, true);
    }
    m_leftovers.push_back(Leftover{action.pgid, now().mono + action.grace, false});
}

void Daemon::prune_leftovers() {
    std::erase_if(m_leftovers, [](const Leftover& left) {
        return ::kill(-left.pgid, 0) != 0 && errno == ESRCH;
    });
    std::erase_if(m_pipes, [](const auto& p) { return p->done(); });
    if (m_exit_status && m_leftovers.empty()) {
        uv_stop(m_loop);
    }
}

void Daemon::on_timer() {
    core::Now t = now();
    for (Leftover& left : m_leftovers) {
        if (!left.killed && left.kill_at <= t.mono) {
            left.killed = true;
            signal_run(left.pgid, SIGKILL, true);
        }
    }
    m_supervisor.on_time(t);
    prune_leftovers();
    pump();
}

void Daemon::arm_timer() {
    std::optional<core::TimePoint> next = m_supervisor.next_deadline();
    for (const Leftover& left : m_leftovers) {
        if (!left.killed && (!next || left.kill_at < *next)) {
            next = left.kill_at;
        }
    }
    if (!next) {
        m_timer.stop();
        return;
    }
    auto left = *next - std::chrono::steady_clock::now();
    // Round up: a timer that fires a hair early would only find nothing due and re-arm.
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    m_timer.start(static_cast<std::uint64_t>(std::max<std::int64_t>(0, ms)),
                  [this] { on_timer(); });
}

}  // namespace pkit::shell
