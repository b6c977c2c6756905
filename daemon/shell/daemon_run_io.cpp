// The Daemon's side of runs: spawns (the Spawner), the output pipes, forwarding, the leftovers of
// a run's process group, and the one deadline timer.

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <type_traits>

#include "daemon/shell/control/request_handler.hpp"
#include "daemon/shell/daemon.hpp"
#include "daemon/shell/launch/launch_child.hpp"
#include "daemon/shell/launch/launcher.hpp"
#include "proto/protocol.hpp"

namespace pkit::shell {

void Daemon::spawn(std::size_t service, std::uint64_t run) {
    // In order behind any run already waiting; spawn_due() applies this turn's budget and
    // the Spawner's room, and arranges the next pump for the rest.
    m_spawns_due.push_back(core::SpawnAction{service, run});
    if (m_reaping) {
        // A restart due at once: spawned from inside the reaping, children exiting before
        // it ends would keep it from ever returning to the loop.
        pump_soon();
        return;
    }
    spawn_due();
}

void Daemon::spawn_now(std::size_t service, std::uint64_t run) {
    const core::Service& s = m_supervisor.service(service);
    LaunchRequest request{
        &s.spec(),
        run,
        {},
        m_run_records.for_child(service, s.spec().stop.signal, s.spec().stop.timeout),
        &m_supervisor.daemon_spec()};
    request.listen = m_listen.fds_of(s.spec());
    if (auto notify = open_notify(service, run)) {
        request.extra_env.emplace_back("NOTIFY_SOCKET", *notify);
    }
    if (auto cgroup = run_cgroup(service); !cgroup) {
        m_launches.add_failed(
            service, run,
            LaunchFailure{config::LaunchError::resources, "resources: " + cgroup.error()});
        return;
    } else {
        request.cgroup_dir = std::move(*cgroup);
        request.cgroup_clone = !m_cgroup_tree || !m_cgroup_tree->was_killed(s.name());
    }
    auto prepared = prepare_launch(request);
    if (!prepared) {
        // Reported at the next turn, not from inside this pump: a service that cannot
        // start, restarted at once, would otherwise fail and respawn here for ever.
        m_launches.add_failed(service, run, std::move(prepared.error()));
        return;
    }
    // The clone happens on the Spawner's thread; the service stays `starting` until the
    // child has exec'd (take_spawned, then PendingLaunches).
    m_spawner.submit(service, run, std::move(*prepared));
}

std::size_t Daemon::take_spawned() {
    std::size_t handled = 0;
    for (Spawner::Outcome& outcome : m_spawner.take()) {
        if (!outcome.started) {
            m_launches.add_failed(outcome.service, outcome.run, std::move(outcome.started.error()));
            continue;
        }
        pid_t pid = outcome.started->pid;
        if (outcome.service < m_notify.size() && m_notify[outcome.service]) {
            m_notify[outcome.service]->set_run_pgid(pid);
        }
        m_launches.add(outcome.service, outcome.run, std::move(*outcome.started));
        auto held = std::ranges::find(m_held_exits, pid, &HeldExit::pid);
        if (held != m_held_exits.end()) {
            // The reaper was first: the child exited before its outcome got here.
            int wait_status = held->wait_status;
            m_held_exits.erase(held);
            handle_exit(pid, wait_status);
            ++handled;
        }
    }
    if (!m_spawner.busy() && !m_held_exits.empty()) {
        // No launch can claim them any more: orphans.
        std::vector<HeldExit> orphans;
        orphans.swap(m_held_exits);
        for (const HeldExit& exit : orphans) {
            handle_exit(exit.pid, exit.wait_status);
            ++handled;
        }
    }
    return handled;
}

void Daemon::on_launched(std::size_t service, std::uint64_t run,
                         std::expected<Launched, LaunchFailure> outcome) {
    if (!outcome) {
        m_notify[service].reset();
        core::LaunchFailure failure{outcome.error().kind, std::move(outcome.error().message)};
        m_supervisor.on_launch_failed(service, run, failure, now());
        return;
    }
    const core::Service& s = m_supervisor.service(service);
    if (s.run() != run || s.state() != core::State::starting) {
        // Cannot happen while the core keeps a launching run `starting`; should it, a
        // process the core does not know about must not live on.
        signal_run(outcome->pid, SIGKILL, true);
        close_fds({outcome->stdout_fd, outcome->stderr_fd});
        return;
    }
    auto& pipes =
        pipes_of(service).emplace_back(std::make_unique<RunPipes>(RunPipes{this, service, run}));
    attach_pipes(service, *pipes, outcome->stdout_fd, core::Stream::stdout_);
    attach_pipes(service, *pipes, outcome->stderr_fd, core::Stream::stderr_);
    m_run_records.started(service, outcome->pid);
    if (m_run_cgroups) {
        m_run_cgroups->run_started(service, s.name());
    }
    m_supervisor.on_spawned(service, run, outcome->pid, now());
}

std::size_t Daemon::spawn_due(bool all) {
    if (m_reaping || m_spawns_due.empty()) {
        return 0;
    }
    std::size_t in_flight = m_spawner.in_flight();
    std::size_t room = in_flight >= k_spawns_in_flight ? 0 : k_spawns_in_flight - in_flight;
    std::size_t count =
        all ? m_spawns_due.size() : std::min({m_spawn_budget, room, m_spawns_due.size()});
    m_spawn_budget -= std::min(m_spawn_budget, count);
    // Off the queue before any is spawned, so that what a spawn causes cannot see them.
    std::vector<core::SpawnAction> due(m_spawns_due.begin(),
                                       m_spawns_due.begin() + static_cast<std::ptrdiff_t>(count));
    m_spawns_due.erase(m_spawns_due.begin(),
                       m_spawns_due.begin() + static_cast<std::ptrdiff_t>(count));
    if (!m_spawns_due.empty() && count < room) {
        // The rest at the next turn, after the loop has polled. When the Spawner has no
        // room, its next outcome pumps instead: no turn spins waiting for it.
        pump_soon();
    }
    for (const core::SpawnAction& a : due) {
        spawn_now(a.service, a.run);
    }
    return due.size();
}

std::size_t Daemon::resolve_launches() {
    std::size_t resolved = spawn_due(true);
    m_spawner.wait_all();
    resolved += take_spawned();
    resolved += m_launches.size() == 0 ? 0 : m_launches.resolve_all();
    if (resolved > 0 && !m_pumping) {
        // Not pumped here: the caller may be in the middle of its own loop over what a
        // pump changes (replies, followers).
        pump_soon();
    }
    return resolved;
}

std::size_t Daemon::resolve_launches_of(std::size_t service) {
    std::size_t resolved = 0;
    if (!m_reaping) {
        auto due = std::ranges::find(m_spawns_due, service, &core::SpawnAction::service);
        if (due != m_spawns_due.end()) {
            core::SpawnAction a = *due;
            m_spawns_due.erase(due);
            spawn_now(a.service, a.run);
            ++resolved;
        }
    }
    m_spawner.wait_service(service);
    resolved += take_spawned();
    resolved += m_launches.resolve_service(service);
    if (resolved > 0 && !m_pumping) {
        pump_soon();
    }
    return resolved;
}

void Daemon::attach_pipes(std::size_t service, RunPipes& pipes, int fd, core::Stream stream) {
    auto& slot = stream == core::Stream::stdout_ ? pipes.out : pipes.err;
    // Two pointers' worth of trivially copyable captures: std::function keeps them in
    // its own buffer, so a run's readers cost no allocation for their callbacks (with a
    // thousand services, four fewer allocations each).
    RunPipes* entry = &pipes;
    auto on_line = [entry, stream](std::string_view line) {
        entry->daemon->on_line(entry->service, entry->run, stream, line);
    };
    auto on_eof = [entry, reader = &slot] {
        // Closing the reader inside its own callback is allowed; the entry itself is
        // swept later, outside any callback of its readers.
        entry->daemon->m_pipes_to_sweep.push_back(entry->service);
        reader->close();
        if (entry->done()) {
            entry->daemon->expect_exit(entry->service, entry->run);
        }
    };
    static_assert(sizeof(on_line) <= 2 * sizeof(void*) &&
                  std::is_trivially_copyable_v<decltype(on_line)>);
    static_assert(sizeof(on_eof) <= 2 * sizeof(void*) &&
                  std::is_trivially_copyable_v<decltype(on_eof)>);
    slot = LineReader(m_loop, on_line, on_eof);
    if (auto started = slot.start(fd); !started) {
        slot.close();
        log("warning", "cannot read the output of " + m_supervisor.service(service).name() + ": " +
                           uv_strerror(started.error()));
    }
}

void Daemon::expect_exit(std::size_t service, std::uint64_t run) {
    // Both of the run's pipes ended, as they do when it ends: the reaper waits for its
    // pid itself instead of scanning every child (Reaper::expect).
    m_reaper.expect(m_supervisor.service(service).pid_of(run));
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
            writer.batch_line({text});
            return;
        case config::Forward::prefix:
            if (m_options.log_format == LogFormat::json) {
                proto::json line = {{"at", wall},
                                    {"service", s.name()},
                                    {"stream", core::to_string(stream)},
                                    {"text", text}};
                std::string encoded = proto::to_line(line);
                encoded.pop_back();
                writer.batch_line({encoded});
            } else {
                writer.batch_line({s.name(), " | ", text});
            }
            return;
    }
}

std::vector<std::unique_ptr<Daemon::RunPipes>>& Daemon::pipes_of(std::size_t service) {
    if (service >= m_pipes.size()) {
        m_pipes.resize(std::max(service + 1, m_supervisor.size()));  // a reload added some
    }
    return m_pipes[service];
}

void Daemon::drain_pipes(std::size_t service) {
    for (auto& pipes : pipes_of(service)) {
        pipes->out.drain();
        pipes->err.drain();
    }
    sweep_pipes(service);
}

void Daemon::sweep_pipes(std::size_t service) {
    std::erase_if(pipes_of(service), [](const auto& p) { return p->done(); });
}

std::optional<std::string> Daemon::open_notify(std::size_t service, std::uint64_t run) {
    const config::ServiceSpec& spec = m_supervisor.service(service).spec();
    m_notify[service].reset();
    if (!spec.ready->notify) {
        return std::nullopt;
    }
    // Next to the control socket: a directory pkitd owns, short enough for sun_path.
    std::string dir = m_options.socket_path.substr(0, m_options.socket_path.rfind('/') + 1);
    std::string path = dir + "notify/" + spec.name + "." + std::to_string(run) + ".sock";
    auto socket = NotifySocket::open(
        m_loop, path,
        [this, service, run](const NotifyMessage& message) {
            // A READY=1 may beat the report pipe's end of file to the loop; the core
            // takes messages only from a run whose pid it knows.
            resolve_launches_of(service);
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
        action.purpose == core::ProbePurpose::ready ? spec.ready->probe : *spec.health;
    m_probes.run(ProbeRequest{action.service, action.run, action.purpose, &probe, &spec,
                              probe.timeout, &m_supervisor.daemon_spec()});
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
    // Nothing left in the group is the common case: one kill() finds out. The signal
    // goes with SIGCONT in the order of the stop sequence (SPEC §7).
    if (!stop_signal(action.pgid, action.signal, true)) {
        return;
    }
    m_leftovers.push_back(Leftover{action.pgid, now().mono + action.grace, false});
}

void Daemon::prune_leftovers() {
    std::erase_if(m_leftovers, [](const Leftover& left) {
        return ::kill(-left.pgid, 0) != 0 && errno == ESRCH;
    });
    for (std::size_t service : m_pipes_to_sweep) {
        sweep_pipes(service);
    }
    m_pipes_to_sweep.clear();
    if (m_exit_status && m_leftovers.empty()) {
        uv_stop(m_loop);
    }
}

void Daemon::on_timer() {
    ScopedFlag in_timer(m_in_timer);
    core::Now t = now();
    for (Leftover& left : m_leftovers) {
        if (!left.killed && left.kill_at <= t.mono) {
            left.killed = true;
            signal_run(left.pgid, SIGKILL, true);
        }
    }
    if (m_run_cgroups) {
        m_run_cgroups->on_time(t.mono);
    }
    while (!m_wake_ups.empty() && m_wake_ups.top() <= t.mono) {
        m_wake_ups.pop();  // the pump below answers what was waiting for it
    }
    m_supervisor.on_time(t);
    prune_leftovers();
    pump();
}

void Daemon::wake_at(core::TimePoint deadline) {
    m_wake_ups.push(deadline);
    arm_timer();
}

void Daemon::arm_timer() {
    std::optional<core::TimePoint> next = m_supervisor.next_deadline();
    for (const Leftover& left : m_leftovers) {
        if (!left.killed && (!next || left.kill_at < *next)) {
            next = left.kill_at;
        }
    }
    if (!m_wake_ups.empty() && (!next || m_wake_ups.top() < *next)) {
        next = m_wake_ups.top();  // a `wait` request's `within`
    }
    if (auto held = m_run_cgroups ? m_run_cgroups->next_deadline() : std::nullopt;
        held && (!next || *held < *next)) {
        next = held;  // a held exit's cgroup kill
    }
    if (!next) {
        m_timer.stop();
        return;
    }
    auto left = *next - std::chrono::steady_clock::now();
    // Round up: a timer that fires a hair early would only find nothing due and re-arm.
    // A deadline already due waits 1 ms when the timer re-arms from its own callback:
    // libuv (before 1.45) would run a 0 ms timer again in the same pass, before any I/O.
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    std::int64_t least = m_in_timer ? 1 : 0;
    m_timer.start(static_cast<std::uint64_t>(std::max<std::int64_t>(least, ms)),
                  [this] { on_timer(); });
}

}  // namespace pkit::shell
