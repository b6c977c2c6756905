#include "daemon/shell/daemon.hpp"

#include <malloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <variant>

#include "config/loader.hpp"
#include "daemon/shell/control/event_view.hpp"
#include "daemon/shell/control/health_view.hpp"
#include "daemon/shell/control/request_handler.hpp"
#include "daemon/shell/http/endpoint.hpp"
#include "daemon/shell/io/zone.hpp"
#include "daemon/shell/launch/launcher.hpp"
#include "proto/socket_path.hpp"
#include "proto/version.hpp"

namespace pkit::shell {

namespace {

core::Now read_clock() {
    auto wall = std::chrono::system_clock::now().time_since_epoch();
    return core::Now{std::chrono::steady_clock::now(), std::chrono::duration<double>(wall).count()};
}

// The one place a run's wait status is decoded: the core takes the result.
core::ProcessExit decode_wait_status(int wait_status) {
    core::ProcessExit exit;
    if (WIFEXITED(wait_status)) {
        exit.code = WEXITSTATUS(wait_status);
    } else if (WIFSIGNALED(wait_status)) {
        exit.signal = WTERMSIG(wait_status);
    }
    return exit;
}

}  // namespace

Daemon::Daemon(uv_loop_t* loop, config::Tree tree, DaemonOptions options)
    : Daemon(loop, core::Supervisor(std::move(tree), nullptr), std::move(options)) {}

Daemon::Daemon(uv_loop_t* loop, core::Supervisor supervisor, DaemonOptions options)
    : m_loop(loop),
      m_options(std::move(options)),
      m_supervisor(std::move(supervisor)),
      m_rng(std::random_device{}()),
      m_started(std::chrono::steady_clock::now()),
      m_stdout(loop, STDOUT_FILENO),
      m_stderr(loop, STDERR_FILENO),
      m_reaper(loop, [this](pid_t pid, int status) { on_child(pid, status); }),
      m_signal_pace(loop),
      m_timer(loop),
      m_probes(loop,
               [this](std::size_t service, std::uint64_t run, core::ProbePurpose purpose, bool ok,
                      std::string detail) { on_probe_result(service, run, purpose, ok, detail); }),
      m_systemd(loop, m_options.systemd),
      m_launches(
          loop,
          [this](std::size_t service, std::uint64_t run,
                 std::expected<Launched, LaunchFailure> outcome) {
              on_launched(service, run, std::move(outcome));
          },
          [this] { pump_soon(); }),
      m_spawner(loop,
                [this] {
                    take_spawned();
                    pump_soon();
                }),
      m_pump_soon(loop,
                  [this] {
                      m_spawn_budget = k_spawns_per_turn;  // a new turn
                      pump();
                  }),
      m_prune_soon(loop, [this] { prune_leftovers(); }),
      m_notify(m_supervisor.size()),
      m_pipes(m_supervisor.size()) {
    m_supervisor.set_random(
        [this] { return std::uniform_real_distribution<double>(0.0, 1.0)(m_rng); });
    m_memory = std::make_unique<MemoryWatch>(
        loop, m_supervisor, [this](const auto& services) { return run_cgroup_reads(services); },
        [this](const std::vector<MemorySample>& samples) {
            for (const MemorySample& m : samples) {
                m_supervisor.on_memory(m.service, m.run, m.bytes, m.cgroup, now());
            }
            pump();
        });
    m_memory->refresh();
}

Daemon::~Daemon() {
    m_memory.reset();
    if (m_resources_pass != nullptr) {
        m_resources_pass->abandon();  // nobody is left to answer
    }
}

core::Now Daemon::now() const {
    return read_clock();
}

void Daemon::pump_soon() {
    m_pump_soon.schedule();
}

double Daemon::uptime() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_started).count();
}

proto::DaemonStatus Daemon::daemon_status() const {
    proto::DaemonStatus status;
    status.pid = static_cast<int>(::getpid());
    status.version = std::string(proto::version());
    status.uptime = uptime();
    status.config_dir = m_options.config_dir;
    status.socket = m_options.socket_path;
    status.state = shutting_down() ? "shutting_down" : "running";
    status.orphans_reaped = static_cast<int>(m_orphans);
    status.storm_pauses = m_supervisor.daemon_storm_pauses();
    status.cgroups.enabled = m_cgroup_tree != nullptr;
    if (m_cgroup_tree) {
        status.cgroups.path = m_cgroup_tree->root();
        status.cgroups.controllers = m_cgroup_tree->controllers();
    } else {
        status.cgroups.reason = m_cgroup_choice.reason;
    }
    return status;
}

void Daemon::command(const std::function<void(core::Supervisor&, core::Now)>& act) {
    resolve_launches();
    act(m_supervisor, now());
    pump();
}

int Daemon::run() {
    // Writes to a vanished client or reader must come back as EPIPE, not kill pkitd.
    // Runs get default dispositions back before exec (the launcher resets them).
    ::signal(SIGPIPE, SIG_IGN);
    if (auto raised = raise_nofile_limit(); !raised) {
        log("warning",
            std::string("cannot raise the open file limit: ") + std::strerror(raised.error()));
    }
    if (auto subreaper = become_subreaper_unless_pid1(); !subreaper) {
        log("warning",
            std::string("cannot become a child subreaper: ") + std::strerror(subreaper.error()));
    }
    // Before the Spawner's thread and any run: pkitd moves into its own cgroup first (after
    // an upgrade in place it is there already, beside its services' cgroups).
    if (!open_cgroups()) {
        return 3;
    }
    m_supervisor.set_zone(zone_from_environment());
    if (m_options.resume) {
        // Before the reaper's first batch: an exit during the exec is a run's, judged.
        resume(*m_options.resume);
        m_options.resume.reset();
        // The state's document is gone (main read it): its pages go back to the
        // system, so that pkitd after an upgrade weighs what a fresh one does.
        ::malloc_trim(0);
    }
    if (auto started = m_reaper.start(); !started) {
        log("error", std::string("cannot watch SIGCHLD: ") + uv_strerror(started.error()));
        return 3;
    }
    m_reaper.reap_batch();
    if (auto spawner = m_spawner.start(); !spawner) {
        log("warning", std::string("cannot start the spawner thread, launching from the loop: ") +
                           std::strerror(spawner.error()));
    }
    for (int signo : {SIGTERM, SIGINT, SIGHUP}) {
        auto handle = std::make_unique<UvHandle<uv_signal_t>>(this);
        handle->init(uv_signal_init, m_loop);
        uv_signal_start(
            handle->get(),
            [](uv_signal_t* h, int n) {
                if (h->data != nullptr) {
                    static_cast<Daemon*>(h->data)->on_signal(n);
                }
            },
            signo);
        m_signals.push_back(std::move(handle));
    }
    const bool resumed = m_control != nullptr;
    if (!resumed && m_options.salvage) {
        // An upgrade whose state could not be resumed: the listening socket and the
        // clients are still taken over (every service starts afresh).
        if (m_options.salvage->control_fd >= 0) {
            auto control = RequestHandler::adopt(m_loop, m_options.socket_path,
                                                 static_cast<DaemonPort&>(*this),
                                                 m_options.salvage->control_fd);
            if (control) {
                m_control = std::move(*control);
            } else {
                log("error", control.error());
            }
        }
        m_takeover = std::move(m_options.salvage);
        m_options.salvage.reset();
    }
    if (!m_control) {
        auto control =
            RequestHandler::open(m_loop, m_options.socket_path, static_cast<DaemonPort&>(*this));
        if (!control) {
            log("error", control.error() + "; " + proto::k_daemon_socket_hint);
            return 3;
        }
        m_control = std::move(*control);
    }
    // The socket is ours, so no live pkitd serves this configuration: what its records
    // hold was left by one that died, and must end before any service starts again.
    if (resumed) {
        // After an upgrade in place the records are this pkitd's own runs.
    } else if (auto records = m_run_records.open(m_options.socket_path + ".runs"); !records) {
        if (records.error().held) {
            log("error", records.error().message + ": is it still running?");
            return 3;
        }
        log("warning",
            records.error().message + ": should pkitd be killed, the next one cannot end its runs");
    } else if (auto ended = m_run_records.end_recorded_runs(); !ended.empty()) {
        std::string pids;
        for (pid_t pid : ended) {
            pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
        }
        log("warning", "ended " + std::to_string(ended.size()) +
                           " runs a previous pkitd left running (pids " + pids + ")");
    }
    if (!m_options.socket_note.empty()) {
        log("info", m_options.socket_note);
    }
    if (!bind_listen_sockets()) {
        return 2;  // a configuration error, as SPEC §14 has it
    }
    if (!m_http) {
        m_http = std::make_unique<http::Endpoint>(*this);
        if (auto opened = m_http->open(m_supervisor.daemon_spec().http); !opened) {
            log("error", opened.error());
            return 3;
        }
    }

    if (!resumed) {
        log("info", proto::version_line("pkitd") + " started (pid " + std::to_string(::getpid()) +
                        ", " + std::to_string(m_supervisor.size()) + " services, socket " +
                        m_options.socket_path + ")");
        log_load_warnings(m_options.load_warnings);
        m_options.load_warnings.clear();
        m_supervisor.start(now());
    }
    take_clients_over();
    pump();
    // The socket accepts and the autostart services are launched: systemd may go on.
    m_systemd.ready(status_summary(m_supervisor));
    uv_run(m_loop, UV_RUN_DEFAULT);

    m_http.reset();
    m_control.reset();
    close_cgroups();
    m_notify.clear();
    m_pipes.clear();
    m_signals.clear();
    m_stdout.flush_blocking();
    m_stderr.flush_blocking();
    return m_exit_status.value_or(0);
}

bool Daemon::bind_listen_sockets() {
    std::vector<const config::ServiceSpec*> specs;
    for (std::size_t i = 0; i < m_supervisor.size(); ++i) {
        specs.push_back(&m_supervisor.service(i).spec());
    }
    auto sockets = m_listen.stage(specs);
    if (!sockets) {
        // As a load's errors are printed (SPEC §21): each line FILE:LINE:COL: error: ...,
        // then how many (the text log; the JSON log has one record an error).
        const bool text = m_options.log_format == LogFormat::text;
        for (const config::Diagnostic& d : sockets.error()) {
            text ? m_stderr.write_line(d.to_string()) : log("error", d.to_string());
        }
        if (text) {
            const std::size_t n = sockets.error().size();
            m_stderr.write_line("pkitd: " + std::to_string(n) + " configuration error" +
                                (n == 1 ? "" : "s") + " in " + m_options.config_dir);
        }
        return false;
    }
    m_listen.commit(std::move(*sockets));
    return true;
}

void Daemon::pump() {
    if (m_pumping) {
        return;  // an action's own input is drained by the outer loop
    }
    m_pumping = true;
    spawn_due();
    for (auto actions = m_supervisor.take_actions(); !actions.empty();
         actions = m_supervisor.take_actions()) {
        for (const core::Action& action : actions) {
            execute(action);
        }
    }
    m_pumping = false;
    if (m_control) {
        m_control->after_pump();
    }
    arm_timer();
    if (m_systemd.enabled()) {
        m_systemd.status(status_summary(m_supervisor));
    }
    check_all_done();
}

void Daemon::check_all_done() {
    if (m_supervisor.daemon_spec().exit_when != config::ExitWhen::all_done ||
        m_supervisor.shutting_down()) {
        return;
    }
    std::optional<int> status = m_supervisor.all_done_status();
    if (!status) {
        return;
    }
    log("info", std::string("shutting down: exit_when = \"all_done\" and nothing is left to run") +
                    (*status == 0 ? "" : " (a service failed or is left waiting: exit 1)"));
    m_systemd.stopping();
    resolve_launches();
    m_supervisor.shutdown(now(), *status);
    pump();
}

// One overload per action type: a new type in core::Action fails to compile here
// instead of being ignored.
void Daemon::execute(const core::Action& action) {
    struct Executor {
        Daemon& d;
        void operator()(const core::SpawnAction& a) const {
            // The core sees no difference whether it is spawned now or deferred: the run
            // is launched, its pid known later.
            d.spawn(a.service, a.run);
        }
        void operator()(const core::SignalAction& a) const { d.signal_action(a); }
        void operator()(const core::CleanupGroupAction& a) const { d.cleanup_group(a); }
        void operator()(const core::ProbeAction& a) const { d.run_probe(a); }
        void operator()(const core::EmitAction& a) const { d.emit(a.event); }
        void operator()(const core::ExitAction& a) const { d.finish(a.status); }
        void operator()(const core::FreezeAction& a) const { d.freeze_action(a); }
    };
    std::visit(Executor{*this}, action);
}

void Daemon::emit(const core::Event& event) {
    // The service as it is after the step that emitted the event: its end state and exit.
    std::optional<EndFacts> facts;
    if (auto index = event.service.empty() ? std::nullopt : m_supervisor.find(event.service)) {
        facts = end_facts(m_supervisor.service(*index));
    }
    const std::string message = event_text(event, facts ? &*facts : nullptr);
    // Batched with the turn's other lines: a shutdown of 10,000 services emits 10,000
    // events, and a write(2) each was a fifth of what pkitd did after the last exit.
    // A line that log() writes meanwhile goes after them (OutputWriter keeps the order).
    if (m_options.log_format == LogFormat::json) {
        proto::json line = event_json(event);
        line["level"] = "info";
        line["msg"] = message;
        std::string text = proto::to_line(line);
        text.pop_back();
        m_stderr.batch_line({text});
    } else {
        m_stderr.batch_line({"pkitd: ", message});
    }
    if (m_control) {
        m_control->publish(event);
    }
}

void Daemon::log(std::string_view level, const std::string& message) {
    if (m_options.log_format == LogFormat::json) {
        proto::json line = {{"at", now().wall}, {"level", level}, {"msg", message}};
        std::string text = proto::to_line(line);
        text.pop_back();
        m_stderr.write_line(text);
    } else if (level == "info") {
        m_stderr.write_line("pkitd: " + message);
    } else {
        m_stderr.write_line("pkitd: " + std::string(level) + ": " + message);
    }
}

void Daemon::on_child(pid_t pid, int wait_status) {
    if (m_probes.on_child_exit(pid, wait_status)) {
        return;  // an exec probe's: its result went to on_probe_result
    }
    // Inside the reaping, pumps defer their spawns to the next turn: see execute().
    ScopedFlag reaping(m_reaping);
    if (m_spawner.busy() && !knows_pid(pid)) {
        // Maybe a child whose outcome is still on its way from the Spawner.
        take_spawned();
        if (m_spawner.busy() && !knows_pid(pid)) {
            m_held_exits.push_back(HeldExit{pid, wait_status});
            pump();
            return;
        }
    }
    handle_exit(pid, wait_status);
    pump();
}

bool Daemon::knows_pid(pid_t pid) const {
    return m_launches.knows(pid) || m_supervisor.service_of(pid).has_value();
}

void Daemon::handle_exit(pid_t pid, int wait_status, bool may_hold) {
    if (on_upgrade_child(pid, wait_status)) {
        return;
    }
    if (m_launches.on_exit(pid)) {
        return;  // a failed launch's child: its failure went to on_launch_failed
    }
    core::ProcessExit exit = decode_wait_status(wait_status);
    if (auto service = m_supervisor.service_of(pid)) {
        if (may_hold && hold_exit(*service, pid, wait_status)) {
            return;  // its cgroup is not empty yet: on_cgroup_empty goes on
        }
        // The run's end: memory.events read again (not for a run a start_first restart
        // replaced, which shares the cgroup with its successor).
        exit.oom_killed = m_supervisor.service(*service).pid() == pid && run_oom_killed(*service);
        // Everything the run wrote before it exited is in its pipes now: read it, so
        // that output_matches sees the run's last lines.
        drain_pipes(*service);
        if (m_supervisor.service(*service).pid() == pid) {
            // Not for a run a start_first restart replaced: the probes and the notify
            // socket are its successor's.
            end_run(*service);
        }
        m_run_records.ended(pid);
    }
    if (!m_supervisor.on_exit(pid, exit, now())) {
        ++m_orphans;
    }
    m_prune_soon.schedule();
}

void Daemon::on_signal(int signo) {
    if (signo == SIGHUP) {
        reload([](const ReloadResult&) {});  // answered in the log only
        return;
    }
    if (m_supervisor.shutting_down()) {
        // A second SIGTERM or SIGINT: no more waiting.
        log("warning", std::string("second ") + sigabbrev_np(signo) +
                           ": killing every remaining process group");
        resolve_launches();  // so that every child has a pid to kill
        kill_everything();
        m_exit_status = 128 + signo;
        uv_stop(m_loop);
        return;
    }
    request_shutdown(std::string("SIG") + sigabbrev_np(signo) + " received");
}

void Daemon::request_shutdown(const std::string& why) {
    if (m_supervisor.shutting_down()) {
        return;
    }
    log("info", "shutting down: " + why);
    m_systemd.stopping();
    // A run still between fork and exec has no pid the core could stop yet.
    resolve_launches();
    m_supervisor.shutdown(now());
    pump();
}

void Daemon::finish(int status) {
    m_signal_pace.flush();
    if (!m_exit_status) {
        m_exit_status = status;
    }
    prune_leftovers();
}

void Daemon::kill_everything() {
    for (std::size_t i = 0; i < m_supervisor.size(); ++i) {
        const core::Service& s = m_supervisor.service(i);
        if (s.has_process()) {
            signal_run(s.pid(), SIGKILL, s.spec().stop.mode == config::StopMode::group);
            signal_run(s.draining_pid(), SIGKILL, s.spec().stop.mode == config::StopMode::group);
            if (m_run_cgroups) {
                m_run_cgroups->kill(s.name());
            }
        }
    }
    for (Leftover& left : m_leftovers) {
        signal_run(left.pgid, SIGKILL, true);
    }
    if (m_run_cgroups) {
        m_run_cgroups->kill_held();
    }
}

}  // namespace pkit::shell
