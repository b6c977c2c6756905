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
#include "daemon/shell/control/request_handler.hpp"
#include "daemon/shell/http/endpoint.hpp"
#include "daemon/shell/io/zone.hpp"
#include "daemon/shell/launch/launcher.hpp"
#include "daemon/shell/runs/forward.hpp"
#include "daemon/shell/runs/run_commands.hpp"
#include "daemon/shell/upgrade/hand_over.hpp"
#include "daemon/shell/views/event_view.hpp"
#include "daemon/shell/views/health_view.hpp"
#include "proto/socket_path.hpp"
#include "proto/version.hpp"

namespace pkit::shell {

namespace {

core::Now read_clock() {
    auto wall = std::chrono::system_clock::now().time_since_epoch();
    return core::Now{std::chrono::steady_clock::now(), std::chrono::duration<double>(wall).count()};
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
      m_log(loop, m_options.log_format),
      m_reaper(loop, [this](pid_t pid, int status) { on_child(pid, status); }),
      m_signal_pace(loop),
      m_systemd(loop, m_options.systemd),
      m_cgroups(
          loop, m_supervisor,
          [this](std::string_view level, const std::string& m) { log(level, m); },
          [this] { return now(); },
          [this](pid_t pid, int wait_status) {
              // The run has ended now: its exit goes on as if it had just been reaped.
              auto reaping = m_starts.reaping();
              handle_exit(pid, wait_status, &m_cgroups);
              pump();
          }),
      m_probes(loop, m_supervisor,
               [this](std::size_t service, std::uint64_t run, core::ProbePurpose purpose, bool ok,
                      std::string detail) { on_probe_result(service, run, purpose, ok, detail); }),
      m_notify(
          loop, m_supervisor, m_options.socket_path,
          [this](std::size_t service, std::uint64_t run, const NotifyMessage& message) {
              // A READY=1 may beat the report pipe's end of file to the loop; the core
              // takes messages only from a run whose pid it knows.
              m_starts.resolve(service);
              m_supervisor.on_notify(service, run, message, now());
              pump();
          },
          [this](std::string_view level, const std::string& m) { log(level, m); }),
      m_output(
          loop, m_supervisor,
          [this](std::size_t service, std::uint64_t run, core::Stream stream,
                 std::string_view text) { on_line(service, run, stream, text); },
          [this](std::size_t service, std::uint64_t run) {
              // Both of the run's pipes ended, as they do when it ends: the reaper waits
              // for its pid itself instead of scanning every child (Reaper::expect).
              m_reaper.expect(m_supervisor.service(service).pid_of(run));
          },
          [this](std::string_view level, const std::string& m) { log(level, m); }),
      m_logs(
          loop, m_supervisor, m_options.config_dir,
          [this](std::string_view level, const std::string& m) { log(level, m); },
          [this](const std::string& service, const std::string& text) {
              emit(core::Event{.type = core::EventType::log_error,
                               .service = service,
                               .at = now().wall,
                               .reason = text});
          }),
      m_starts(loop, m_supervisor,
               RunStarts::Hooks{
                   [this](std::size_t service, std::uint64_t run) { return prepare(service, run); },
                   [this](std::size_t service, pid_t pid) { m_notify.cloned(service, pid); },
                   [this](std::size_t service, std::uint64_t run,
                          std::expected<Launched, LaunchFailure> outcome) {
                       on_launched(service, run, std::move(outcome));
                   },
                   [this](pid_t pid, int wait_status) { handle_exit(pid, wait_status); },
                   [this] { pump_soon(); },
                   [this] { return m_pumping; },
               }),
      m_upgrader(loop, static_cast<upgrade::UpgradeHost&>(*this),
                 upgrade::ExecArgs{m_options.binary, m_options.config_dir, m_options.socket_path,
                                   m_options.log_format == LogFormat::json ? "json" : "text",
                                   m_options.systemd}),
      m_deadlines(
          loop, [this] { return now(); }, [this](core::Now t) { on_time(t); }),
      // The fixed order an exit is offered in (handle_exit; exit_owners.hpp says why).
      m_exit_owners(exit_order(
          {m_upgrader, m_starts, m_cgroups, m_output, m_probes, m_notify, m_run_records})),
      m_pump_soon(loop,
                  [this] {
                      m_starts.new_turn();
                      pump();
                  }),
      m_prune_soon(loop, [this] { prune_leftovers(); }),
      m_reloader(loop, static_cast<ReloadHost&>(*this), m_options.config_dir, m_options.load_cache,
                 m_options.socket_path, m_options.socket_from_config) {
    m_supervisor.set_random(
        [this] { return std::uniform_real_distribution<double>(0.0, 1.0)(m_rng); });
    m_memory = std::make_unique<MemoryWatch>(
        loop, m_supervisor, [this](const auto& services) { return run_cgroup_reads(services); },
        [this](const std::vector<MemorySample>& samples) {
            // memory.current only where the memory controller is on: else the RSS.
            const auto on = m_cgroups.info().controllers;
            const bool current = std::ranges::find(on, "memory") != on.end();
            for (const MemorySample& m : samples) {
                m_supervisor.on_memory(m.service, m.run, m.bytes, m.cgroup && current, now());
            }
            pump();
        });
    m_memory->refresh();
    // When the timer fires, in this order: leftovers' kills, held exits' cgroup kills.
    m_deadlines.add(m_leftovers);
    m_deadlines.add(m_cgroups);
}

Daemon::~Daemon() = default;

core::Now Daemon::now() const {
    return read_clock();
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
    status.state = m_supervisor.shutting_down() ? "shutting_down" : "running";
    status.orphans_reaped = static_cast<int>(m_orphans);
    status.storm_pauses = m_supervisor.daemon_storm_pauses();
    status.cgroups = m_cgroups.info();
    return status;
}

void Daemon::command(const std::function<void(RunCommands&)>& act) {
    m_starts.resolve();
    RunCommandsAt commands(m_supervisor, m_cgroups, now());
    act(commands);
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
    if (!m_cgroups.open(m_options.proc_self, m_options.resume.has_value())) {
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
    if (auto spawner = m_starts.start_thread(); !spawner) {
        log("warning", std::string("cannot start the spawner thread, launching from the loop: ") +
                           std::strerror(spawner.error()));
    }
    for (int signo : {SIGTERM, SIGINT, SIGHUP, SIGUSR1}) {
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
    if (auto failed = open_endpoints(resumed)) {
        return *failed;
    }
    m_logs.apply();  // after an upgrade too: the same files, appended to
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
    m_cgroups.close();
    m_notify.clear();
    m_output.clear();
    m_signals.clear();
    (void)m_logs.flush(k_logs_flush);
    m_log.flush();
    return m_exit_status.value_or(0);
}

std::optional<int> Daemon::open_endpoints(bool resumed) {
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
    // After an upgrade in place the records are this pkitd's own runs.
    if (!resumed &&
        !take_over_records(m_run_records, m_options.socket_path + ".runs",
                           [this](std::string_view l, const std::string& m) { log(l, m); })) {
        return 3;
    }
    if (!m_options.socket_note.empty()) {
        log("info", m_options.socket_note);
    }
    if (!bind_listen_sockets()) {
        return 2;  // a configuration error, as SPEC §14 has it
    }
    if (!m_http) {
        m_http = std::make_unique<http::Endpoint>(static_cast<http::HttpPort&>(*this));
        if (auto opened = m_http->open(m_supervisor.daemon_spec().http); !opened) {
            log("error", opened.error());
            return 3;
        }
    }
    return std::nullopt;
}

bool Daemon::bind_listen_sockets() {
    std::vector<const config::ServiceSpec*> specs;
    for (std::size_t i = 0; i < m_supervisor.size(); ++i) {
        specs.push_back(&m_supervisor.service(i).spec());
    }
    auto sockets = m_listen.stage(specs);
    if (!sockets) {
        m_log.errors(sockets.error(), m_options.config_dir, now().wall);  // as a load's (SPEC §21)
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
    m_starts.spawn_due();
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
    m_starts.resolve();
    m_supervisor.shutdown(now(), *status);
    pump();
}

// One overload per action type: a new type in core::Action fails to compile here
// instead of being ignored. Each goes to the one owner that does it.
void Daemon::execute(const core::Action& action) {
    struct Executor {
        Daemon& d;
        void operator()(const core::SpawnAction& a) const {
            // The core sees no difference whether it is spawned now or deferred: the run
            // is launched, its pid known later.
            d.m_starts.spawn(a.service, a.run);
        }
        void operator()(const core::SignalAction& a) const {
            // Paced (SignalPace): by the time it is sent, the run may have been reaped,
            // its pid free for another process. The index still names the same service:
            // a removed service's slot goes to another only once no paced signal waits.
            Daemon* daemon = &d;
            d.m_signal_pace.submit([daemon, a] {
                if (daemon->m_cgroups.holding(a.service) ||
                    daemon->m_supervisor.service(a.service).signallable(a.run, a.pid)) {
                    daemon->m_cgroups.send(a);
                }
            });
        }
        void operator()(const core::CleanupGroupAction& a) const {
            d.m_leftovers.cleanup(a, d.now().mono);
        }
        void operator()(const core::ProbeAction& a) const { d.m_probes.run(a); }
        void operator()(const core::EmitAction& a) const { d.emit(a.event); }
        void operator()(const core::ExitAction& a) const { d.finish(a.status); }
        void operator()(const core::FreezeAction& a) const { d.m_cgroups.freeze(a); }
    };
    std::visit(Executor{*this}, action);
}

void Daemon::emit(const core::Event& event) {
    // The service as it is after the step that emitted the event: its end state and exit.
    std::optional<EndFacts> facts;
    if (auto index = event.service.empty() ? std::nullopt : m_supervisor.find(event.service)) {
        facts = end_facts(m_supervisor.service(*index));
    }
    m_log.event(event, event_text(event, facts ? &*facts : nullptr));
    if (m_control) {
        m_control->publish(event);
    }
}

void Daemon::log(std::string_view level, const std::string& message) {
    m_log.log(level, message, now().wall);
}

void Daemon::on_child(pid_t pid, int wait_status) {
    if (m_probes.claims(pid, wait_status)) {
        return;  // an exec probe's: its result went to on_probe_result
    }
    // Inside the reaping, pumps defer their spawns to the next turn.
    auto reaping = m_starts.reaping();
    if (!m_starts.defer_unknown(pid, wait_status)) {
        handle_exit(pid, wait_status);
    }
    pump();
}

void Daemon::handle_exit(pid_t pid, int wait_status, const ExitOwner* held_by) {
    ChildExit exit{pid, wait_status, m_supervisor.service_of(pid), held_by,
                   decode_wait_status(wait_status)};
    if (offer_exit(m_exit_owners, exit)) {
        return;
    }
    if (!m_supervisor.on_exit(pid, exit.exit, now())) {
        ++m_orphans;
    }
    m_prune_soon.schedule();
}

void Daemon::on_signal(int signo) {
    if (signo == SIGHUP) {
        m_reloader.reload([](const ReloadResult&) {});  // answered in the log only
        return;
    }
    if (signo == SIGUSR1) {
        log("info", "SIGUSR1 received: reopening every log file");
        m_logs.reopen_all();
        return;
    }
    if (m_supervisor.shutting_down()) {
        // A second SIGTERM or SIGINT: no more waiting.
        log("warning", std::string("second ") + sigabbrev_np(signo) +
                           ": killing every remaining process group");
        m_starts.resolve();  // so that every child has a pid to kill
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
    m_starts.resolve();
    m_supervisor.shutdown(now());
    pump();
}

void Daemon::on_time(core::Now t) {
    m_supervisor.on_time(t);
    prune_leftovers();
    pump();
}

void Daemon::wake_at(core::TimePoint deadline) {
    m_deadlines.wake_at(deadline);
    arm_timer();
}

void Daemon::prune_leftovers() {
    const bool none_left = m_leftovers.prune();
    m_output.sweep();
    if (m_exit_status && none_left) {
        uv_stop(m_loop);
    }
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
            m_cgroups.kill(i);
        }
    }
    m_leftovers.kill_all();
    m_cgroups.kill_held();
}

// --- Runs: their launches, lines and probes -------------------------------------------

std::expected<std::unique_ptr<PreparedLaunch>, LaunchFailure> Daemon::prepare(std::size_t service,
                                                                              std::uint64_t run) {
    const core::Service& s = m_supervisor.service(service);
    LaunchRequest request{
        &s.spec(),
        run,
        {},
        m_run_records.for_child(service, s.spec().stop.signal, s.spec().stop.timeout),
        &m_supervisor.daemon_spec()};
    request.listen = m_listen.fds_of(s.spec());
    if (auto notify = m_notify.open(service, run)) {
        request.extra_env.emplace_back("NOTIFY_SOCKET", *notify);
    }
    auto cgroup = m_cgroups.run_cgroup(service);
    if (!cgroup) {
        return std::unexpected(
            LaunchFailure{config::LaunchError::resources, "resources: " + cgroup.error()});
    }
    request.cgroup_dir = std::move(*cgroup);
    request.cgroup_clone = m_cgroups.clone_into(service);
    return prepare_launch(request);
}

void Daemon::on_launched(std::size_t service, std::uint64_t run,
                         std::expected<Launched, LaunchFailure> outcome) {
    if (!outcome) {
        m_notify.close(service);
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
    m_logs.refresh(service);  // a replacement's definition took the slot since
    m_output.attach(service, run, outcome->stdout_fd, outcome->stderr_fd);
    m_run_records.started(service, outcome->pid);
    m_cgroups.run_started(service);
    m_supervisor.on_spawned(service, run, outcome->pid, now());
}

void Daemon::on_line(std::size_t service, std::uint64_t run, core::Stream stream,
                     std::string_view text) {
    double wall = now().wall;
    m_supervisor.on_output(service, run, stream, text, wall);
    m_logs.line(service, run, stream, wall, text);
    forward_line(m_log.writer(stream), m_log.format(), m_supervisor.service(service), stream, text,
                 wall);
    if (m_control) {
        m_control->publish_line(service, run, stream, text, wall);
    }
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

// --- A new tree (ReloadHost) ------------------------------------------------------------

void Daemon::log_load_warnings(const std::vector<config::Diagnostic>& warnings) {
    m_log.warnings(warnings, now().wall);
}

std::expected<ListenSockets::Staged, std::vector<config::Diagnostic>> Daemon::stage_sockets(
    const config::Tree& tree) {
    std::vector<const config::ServiceSpec*> specs;
    for (const config::ServiceSpec& spec : tree.services) {
        specs.push_back(&spec);
    }
    return m_listen.stage(specs);
}

void Daemon::reloading(bool started) {
    started ? m_systemd.reloading() : m_systemd.reloaded();
}

core::ReloadOutcome Daemon::apply_tree(config::Tree tree,
                                       std::optional<ListenSockets::Staged> sockets) {
    // A replaced or removed service may be launching: the core can stop only a run
    // whose pid it knows.
    m_starts.resolve();
    const std::size_t slots = m_supervisor.size();
    // A slot an owner still holds something of (pipes, a notify socket, a held exit, a
    // paced signal, a request naming it) does not go to another service meanwhile.
    std::vector<bool> held(slots);
    for (std::size_t service = 0; service < slots; ++service) {
        held[service] = m_output.holds(service) || m_notify.holds(service) ||
                        m_cgroups.holding(service) || m_signal_pace.waiting() > 0 ||
                        (m_control && m_control->refers_to(service));
    }
    core::ReloadOutcome outcome = m_supervisor.reload_from(tree, now(), held);
    m_logs.apply();  // files added, switched between two lines, removed
    BackgroundLoad::discard(m_loop, std::move(tree));
    if (sockets) {
        m_listen.commit(std::move(*sockets));
    }
    if (m_control) {
        m_control->apply_access();
    }
    if (m_http) {
        m_http->apply(m_supervisor.daemon_spec().http);
    }
    // Added services got new slots, or slots of removed services that nothing held any
    // more: what the owners kept of those is reset (their pipes and sockets are gone).
    for (const std::string& name : outcome.added) {
        if (auto service = m_supervisor.find(name); service && *service < slots) {
            m_cgroups.slot_reused(*service);
        }
    }
    // Changed [resources] go to the cgroups of the services that have one now.
    m_cgroups.apply_all_limits();
    m_memory->refresh();  // memory_max's intervals
    pump();
    return outcome;
}

// --- An upgrade in place (UpgradeHost; the steps are upgrade/upgrader.cpp) -------------

std::optional<std::string> Daemon::busy_for_upgrade() {
    // A run between fork and exec has no pid to hand over yet: waited for, as a command
    // on runs does (a crash loop relaunching is no reason to refuse). What the core has
    // decided goes out first (a restart's launch); a launch that failed at once may
    // decide another, so a few rounds, not for ever.
    for (int round = 0; round < 4; ++round) {
        pump();
        if (m_starts.resolve() == 0) {
            break;
        }
    }
    if (auto busy = m_supervisor.busy_for_upgrade()) {
        return busy;
    }
    if (m_reloader.busy()) {
        return "a reload is in progress";
    }
    return m_cgroups.busy();
}

std::string Daemon::upgrade_state(int format, std::vector<int>& kept) {
    const core::TimePoint at = now().mono;
    upgrade::DaemonFacts facts = upgrade::collect_facts(
        rooms(), at, m_control ? m_control->listener_fd() : -1,
        m_http && m_http->server() != nullptr ? m_http->server()->listener_fd() : -1, kept);
    facts.from_version = std::string(proto::version());
    facts.started_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(m_started - at).count();
    facts.orphans_reaped = m_orphans;
    if (format >= 3 && m_control) {
        facts.clients = m_control->carry(at);
        for (const CarriedClient& client : facts.clients) {
            kept.push_back(client.connection.fd);
        }
    }
    return upgrade::write_state(m_supervisor, facts, at, format);
}

upgrade::HandOverRooms Daemon::rooms() {
    return {m_supervisor, m_run_records, m_listen,    m_notify,
            m_output,     m_cgroups,     m_leftovers, m_reloader};
}

void Daemon::resume(upgrade::DaemonFacts& facts) {
    const core::Now at = now();
    m_started = facts.saved_at(at.mono) + std::chrono::nanoseconds(facts.started_ns);
    m_orphans = facts.orphans_reaped;
    auto endpoint = [this](const upgrade::KeptFd& kept) {
        if (kept.role == "control") {
            auto control = RequestHandler::adopt(m_loop, m_options.socket_path,
                                                 static_cast<DaemonPort&>(*this), kept.fd);
            control ? void(m_control = std::move(*control)) : log("error", control.error());
            return;
        }
        m_http = std::make_unique<http::Endpoint>(static_cast<http::HttpPort&>(*this));
        if (auto adopted = m_http->adopt(m_supervisor.daemon_spec().http, kept.fd); !adopted) {
            log("error", adopted.error());
        }
    };
    m_takeover =
        upgrade::resume_owners(rooms(), facts, at, m_options.socket_path + ".runs", endpoint,
                               [this](const std::string& message) { log("warning", message); });
    log("info", "upgraded from " + facts.from_version + " (pid " + std::to_string(::getpid()) +
                    ", " + std::to_string(m_supervisor.size()) + " services, " +
                    std::to_string(m_takeover->clients.size()) + " clients)");
}

void Daemon::take_clients_over() {
    if (!m_takeover) {
        return;
    }
    upgrade::Takeover takeover = std::move(*m_takeover);
    m_takeover.reset();
    if (!m_control) {
        for (const CarriedClient& client : takeover.clients) {
            ::close(client.connection.fd);
        }
        return;
    }
    proto::json result = upgrade::takeover_result(takeover, m_supervisor);
    m_control->adopt_clients(std::move(takeover.clients), takeover.saved, result,
                             takeover.from_scratch);
}

}  // namespace pkit::shell
