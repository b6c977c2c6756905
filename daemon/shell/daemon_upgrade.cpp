// Upgrading pkitd in place (SPEC §16): the check and the trial of the new binary, the
// hand-over (state into a memory file, the kept descriptors and the clients' left open,
// execve) and, in the new pkitd, the resume that adopts them and answers the clients.
// The steps are laid out in upgrade/attempt.hpp.

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/core/persist.hpp"
#include "daemon/shell/control/request_handler.hpp"
#include "daemon/shell/daemon.hpp"
#include "daemon/shell/http/endpoint.hpp"
#include "daemon/shell/io/write_all.hpp"
#include "proto/version.hpp"

namespace pkit::shell {

namespace {

bool set_cloexec(int fd, bool on) {
    int flags = ::fcntl(fd, F_GETFD);
    if (flags < 0) {
        return false;
    }
    flags = on ? (flags | FD_CLOEXEC) : (flags & ~FD_CLOEXEC);
    return ::fcntl(fd, F_SETFD, flags) == 0;
}

// The state in a sealed memory file (close-on-exec, its offset at 0): neither the trial
// nor anyone else can change it once written.
std::expected<int, std::string> state_file(const std::string& state) {
    int fd = ::memfd_create("pkit-state", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        return std::unexpected(std::string("cannot make a memory file: ") + std::strerror(errno));
    }
    if (write_all(fd, state) != state.size() ||
        ::fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0 ||
        ::lseek(fd, 0, SEEK_SET) != 0) {
        int error = errno;
        ::close(fd);
        return std::unexpected(std::string("cannot write the state: ") + std::strerror(error));
    }
    return fd;
}

}  // namespace

std::optional<std::string> Daemon::busy_for_upgrade() {
    // A run between fork and exec has no pid to hand over yet: waited for, as a command
    // on runs does (a crash loop relaunching is no reason to refuse). What the core has
    // decided goes out first (a restart's launch); a launch that failed at once may
    // decide another, so a few rounds, not for ever.
    for (int round = 0; round < 4; ++round) {
        pump();
        if (resolve_launches() == 0) {
            break;
        }
    }
    if (auto busy = m_supervisor.busy_for_upgrade()) {
        return busy;
    }
    if (m_loading.busy() || !m_reload_next.empty()) {
        return "a reload is in progress";
    }
    // A group-mode run whose main process exited waits for its cgroup to empty; that
    // wait (at most its stop timeout) is not in the state.
    if (auto held = m_run_cgroups ? m_run_cgroups->any_held() : std::nullopt) {
        return "the run of " + *held + " is ending (its cgroup is not empty yet)";
    }
    return std::nullopt;
}

void Daemon::fail_upgrade(const std::string& why) {
    if (!m_upgrade) {
        return;
    }
    log("error", "upgrade to " + m_upgrade->binary + " failed: " + why + "; nothing changed");
    UpgradeDone done = std::move(m_upgrade->done);
    m_upgrade.reset();
    if (done) {
        done(std::unexpected(why));
    }
}

void Daemon::upgrade(std::string binary, UpgradeDone done) {
    if (binary.empty()) {
        binary = m_options.binary;
    }
    auto refuse = [&](const std::string& why) {
        log("error", "upgrade to " + binary + " refused: " + why);
        done(std::unexpected(why));
    };
    if (m_upgrade) {
        refuse("an upgrade is in progress; nothing changed");
        return;
    }
    // Busy states first, before anything runs.
    if (auto busy = busy_for_upgrade()) {
        refuse(*busy + "; nothing changed");
        return;
    }
    struct stat info {};
    if (binary.empty() || binary.front() != '/') {
        refuse("the binary must be an absolute path: \"" + binary + "\"");
        return;
    }
    if (::stat(binary.c_str(), &info) != 0) {
        refuse(binary + ": " + std::strerror(errno));
        return;
    }
    if (!S_ISREG(info.st_mode) || ::access(binary.c_str(), X_OK) != 0) {
        refuse(binary + " is not an executable file");
        return;
    }
    auto attempt = std::make_unique<upgrade::Attempt>(m_loop, binary, std::move(done),
                                                      [this] { hand_over(); });
    auto started = attempt->child.start(
        {binary, "--upgrade-check"}, -1, upgrade::k_check_limit,
        [this](upgrade::CheckChild::Outcome outcome) { on_upgrade_checked(outcome); });
    if (!started) {
        done = std::move(attempt->done);
        refuse(started.error());
        return;
    }
    m_upgrade = std::move(attempt);
    log("info", "upgrade: checking " + binary);
}

bool Daemon::on_upgrade_child(pid_t pid, int wait_status) {
    return m_upgrade && m_upgrade->child.on_child(pid, wait_status);
}

void Daemon::on_upgrade_checked(const upgrade::CheckChild::Outcome& outcome) {
    const std::string& binary = m_upgrade->binary;
    if (std::string failure = outcome.failure(upgrade::k_check_limit); !failure.empty()) {
        fail_upgrade(binary + " --upgrade-check " + failure);
        return;
    }
    upgrade::CheckAnswer answer = upgrade::parse_check_answer(outcome.output);
    if (answer.version.empty()) {
        fail_upgrade(binary + " --upgrade-check did not say which pkitd it is");
        return;
    }
    m_upgrade->format = upgrade::common_format(answer, upgrade::k_oldest_written_state_version,
                                               core::k_state_version);
    if (m_upgrade->format == 0) {
        std::string formats;
        for (int v = core::k_state_version; v >= upgrade::k_oldest_written_state_version; --v) {
            formats += (formats.empty() ? "" : " or ") + std::to_string(v);
        }
        fail_upgrade(binary + " (pkitd " + answer.version + ") does not read state format " +
                     formats);
        return;
    }
    if (auto busy = busy_for_upgrade()) {
        fail_upgrade(*busy);
        return;
    }
    m_upgrade->to_version = answer.version;
    // The next pkitd reads the configuration from disk: it must be the one running, or
    // the state would meet definitions it was not made with. Read off the loop.
    auto started =
        m_loading.start(m_options.config_dir, config::default_load_options(), m_options.load_cache,
                        [this](config::LoadResult tree) { on_upgrade_config(tree); });
    if (!started) {
        fail_upgrade("cannot read the configuration: " + started.error());
    }
}

void Daemon::on_upgrade_config(const config::LoadResult& tree) {
    if (!m_upgrade) {
        return;
    }
    // What the configuration on disk says that the running one does not, if anything.
    auto differs_from_running = [&](const config::Tree& disk) -> std::optional<std::string> {
        if (!(disk.daemon == m_supervisor.daemon_spec())) {
            return "pkitd.toml";
        }
        std::size_t live = 0;
        for (std::size_t i = 0; i < m_supervisor.size(); ++i) {
            live += m_supervisor.retired(i) ? 0 : 1;
        }
        for (const config::ServiceSpec& spec : disk.services) {
            auto i = m_supervisor.find(spec.name);
            if (!i || !(m_supervisor.service(*i).spec() == spec)) {
                return spec.file;
            }
        }
        if (disk.services.size() != live) {
            return "a removed service file";
        }
        return std::nullopt;
    };
    std::optional<std::string> differs;
    if (!tree) {
        differs = "the configuration in " + m_options.config_dir + " is not valid now";
    } else if (m_scaled.empty()) {
        differs = differs_from_running(*tree);
    } else {
        // The counts `scale` set go in the state, and the next pkitd applies them to
        // what it reads (upgrade::apply_scaled): compared with them applied, as it runs.
        config::Tree scaled = *tree;
        std::vector<upgrade::ScaledFact> facts = scaled_facts();
        if (upgrade::apply_scaled(facts, scaled).size() != facts.size()) {
            differs = "the instances of a file pkitctl scale scaled";
        } else {
            differs = differs_from_running(scaled);
        }
    }
    if (differs) {
        fail_upgrade(differs->starts_with("the configuration")
                         ? *differs
                         : "the configuration on disk differs from the one running (" + *differs +
                               "): reload first, then upgrade");
        return;
    }
    if (m_upgrade->format < 3) {
        // A pkitd that reads no format with clients has no trial either: the reply comes
        // now, before the exec, and the clients end at the exec, as they did then.
        UpgradeDone done = std::move(m_upgrade->done);
        m_upgrade->done = nullptr;
        done(std::pair{std::string(proto::version()), m_upgrade->to_version});
        m_upgrade->exec_turn.schedule();
        return;
    }
    // The trial: the binary reads the state as the hand-over would write it now.
    std::vector<int> kept;
    auto file = state_file(upgrade_state(m_upgrade->format, kept));
    if (!file) {
        fail_upgrade(file.error());
        return;
    }
    const std::string binary = m_upgrade->binary;
    auto started = m_upgrade->child.start(
        {binary, "--upgrade-check", "--state", "3", "--config", m_options.config_dir}, *file,
        upgrade::k_trial_limit,
        [this](upgrade::CheckChild::Outcome outcome) { on_upgrade_tried(outcome); });
    ::close(*file);
    if (!started) {
        fail_upgrade(started.error());
        return;
    }
    log("info", "upgrade: " + binary + " tries the state");
}

void Daemon::on_upgrade_tried(const upgrade::CheckChild::Outcome& outcome) {
    if (std::string failure = outcome.failure(upgrade::k_trial_limit); !failure.empty()) {
        std::string said = upgrade::output_words(outcome.output);
        fail_upgrade(m_upgrade->binary + " cannot resume this pkitd's state: its trial " + failure +
                     (said.empty() ? "" : ": " + said));
        return;
    }
    // Reported at a turn of its own (CheckChild), out of any batch: the exec goes now.
    hand_over();
}

std::vector<upgrade::ScaledFact> Daemon::scaled_facts() const {
    std::vector<upgrade::ScaledFact> facts;
    for (const auto& [file, scaled] : m_scaled) {
        facts.push_back({file, scaled.file_count, scaled.count});
    }
    return facts;
}

upgrade::DaemonFacts Daemon::hand_over_facts(std::vector<int>& kept) {
    upgrade::DaemonFacts facts;
    facts.from_version = std::string(proto::version());
    const core::TimePoint now_mono = now().mono;
    facts.started_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(m_started - now_mono).count();
    facts.orphans_reaped = m_orphans;
    auto keep = [&](upgrade::KeptFd fd) {
        if (fd.fd >= 0) {
            kept.push_back(fd.fd);
            facts.fds.push_back(std::move(fd));
        }
    };
    keep({"control", m_control ? m_control->listener_fd() : -1, "", 0, "", ""});
    if (m_http && m_http->server() != nullptr) {
        keep({"http", m_http->server()->listener_fd(), "", 0, "", ""});
    }
    keep({"records", m_run_records.fd(), "", 0, "", ""});
    for (const auto& [key, fd] : m_listen.kept()) {
        keep({"listen", fd, "", 0, "", key});  // [[listen]]: the key in `path`
    }
    for (std::size_t i = 0; i < m_supervisor.size(); ++i) {
        if (m_supervisor.retired(i)) {
            continue;
        }
        const std::string& name = m_supervisor.service(i).name();
        if (i < m_notify.size() && m_notify[i]) {
            keep({"notify", m_notify[i]->fd(), name, m_supervisor.service(i).run(), "",
                  m_notify[i]->path()});
        }
        if (i >= m_pipes.size()) {
            continue;
        }
        for (const auto& pipes : m_pipes[i]) {
            // What the reader has not delivered goes in the state; what is still in the
            // pipe stays there for the next pkitd, in order behind it.
            if (pipes->out.open()) {
                keep({"stdout", pipes->out.fd(), name, pipes->run, pipes->out.pending(), ""});
            }
            if (pipes->err.open()) {
                keep({"stderr", pipes->err.fd(), name, pipes->run, pipes->err.pending(), ""});
            }
        }
    }
    facts.scaled = scaled_facts();
    for (std::size_t i = 0; m_run_cgroups && i < m_supervisor.size(); ++i) {
        if (!m_supervisor.retired(i) && m_supervisor.service(i).has_process()) {
            auto [usage, oom] = m_run_cgroups->run_bases(i);
            facts.cgroup_runs.push_back({m_supervisor.service(i).name(), usage, oom});
        }
    }
    for (const Leftover& left : m_leftovers) {
        facts.leftovers.push_back(
            {left.pgid,
             std::chrono::duration_cast<std::chrono::nanoseconds>(left.kill_at - now_mono).count(),
             left.killed});
    }
    return facts;
}

std::string Daemon::upgrade_state(int format, std::vector<int>& kept) {
    upgrade::DaemonFacts facts = hand_over_facts(kept);
    const core::TimePoint at = now().mono;
    if (format >= 3 && m_control) {
        facts.clients = m_control->carry(at);
        for (const CarriedClient& client : facts.clients) {
            kept.push_back(client.connection.fd);
        }
    }
    return upgrade::write_state(m_supervisor, facts, at, format);
}

void Daemon::hand_over() {
    if (!m_upgrade) {
        return;
    }
    const std::string binary = m_upgrade->binary;
    const std::string to = m_upgrade->to_version;
    // Every run the core may name has its pid: launches in flight are resolved (by
    // busy_for_upgrade), and the stop signals still paced go now.
    auto busy = busy_for_upgrade();
    m_signal_pace.flush();  // the next pkitd knows nothing of signals still waiting
    if (busy) {
        if (!m_upgrade->done) {
            // Answered already (a next pkitd without clients carried): only logged.
            log("error", "upgrade to " + binary + " abandoned: " + *busy + "; nothing changed");
            m_upgrade.reset();
            return;
        }
        fail_upgrade(*busy);
        return;
    }
    // From here to the exec nothing returns to the loop: no connection is accepted (new
    // ones wait in the listening socket's backlog for the next pkitd), no request read.
    std::vector<int> kept;
    std::string state = upgrade_state(m_upgrade->format, kept);
    auto memfd = state_file(state);
    if (!memfd) {
        fail_upgrade(memfd.error());
        return;
    }
    kept.push_back(*memfd);
    for (int fd : kept) {
        set_cloexec(fd, false);
    }
    std::vector<std::string> args = {binary,
                                     "--config",
                                     m_options.config_dir,
                                     "--socket",
                                     m_options.socket_path,
                                     "--log-format",
                                     m_options.log_format == LogFormat::json ? "json" : "text",
                                     "--resume",
                                     std::to_string(*memfd)};
    std::vector<char*> argv;
    for (std::string& arg : args) {
        argv.push_back(arg.data());
    }
    argv.push_back(nullptr);
    // What systemd gave pkitd goes to the next one, which takes it out again.
    const SystemdEnvironment& systemd = m_options.systemd;
    if (!systemd.notify_socket.empty()) {
        ::setenv("NOTIFY_SOCKET", systemd.notify_socket.c_str(), 1);
    }
    if (systemd.watchdog) {
        ::setenv("WATCHDOG_USEC", std::to_string(systemd.watchdog->count()).c_str(), 1);
        ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
    }
    log("info", "upgrading to pkitd " + to + " (" + binary +
                    "): " + std::to_string(kept.size() - 1) + " descriptors and " +
                    std::to_string(state.size()) + " bytes of state (format " +
                    std::to_string(m_upgrade->format) + ") handed over");
    m_stdout.flush_blocking();
    m_stderr.flush_blocking();
    ::execv(binary.c_str(), argv.data());
    // Still here: the exec failed, and pkitd goes on as it was.
    int error = errno;
    for (const char* name : {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"}) {
        ::unsetenv(name);
    }
    for (int fd : kept) {
        set_cloexec(fd, true);
    }
    ::close(*memfd);
    const std::string why = std::string("exec: ") + std::strerror(error);
    if (!m_upgrade->done) {
        log("error", "upgrade to " + binary + " failed: " + why + "; pkitd goes on as it was");
        m_upgrade.reset();
        return;
    }
    fail_upgrade(why);
}

void Daemon::resume(upgrade::DaemonFacts& facts) {
    const core::Now at = now();
    const core::TimePoint saved = facts.saved_at(at.mono);
    m_started = saved + std::chrono::nanoseconds(facts.started_ns);
    m_orphans = facts.orphans_reaped;
    // The counts `scale` set, which main applied to the tree this pkitd was made with
    // where the file's own count was still theirs.
    for (const upgrade::ScaledFact& f : facts.scaled) {
        if (m_supervisor.find_all(f.file).size() == f.count) {
            m_scaled[f.file] = Scaled{f.file_count, f.count};
        }
    }
    for (const upgrade::LeftoverFact& left : facts.leftovers) {
        m_leftovers.push_back(
            Leftover{left.pgid, saved + std::chrono::nanoseconds(left.kill_in_ns), left.killed});
    }
    for (const upgrade::CgroupRunFact& run : facts.cgroup_runs) {
        // The adopted runs are measured from their own start (cpu.stat, memory.events).
        if (auto service = m_supervisor.find(run.service); service && m_run_cgroups) {
            m_run_cgroups->restore_run_bases(*service, run.usage_usec, run.oom_kill);
        }
    }
    for (const upgrade::KeptFd& kept : facts.fds) {
        set_cloexec(kept.fd, true);
        std::optional<std::size_t> service;
        if (!kept.service.empty()) {
            service = m_supervisor.find(kept.service);
            if (!service) {
                ::close(kept.fd);
                continue;
            }
        }
        if (kept.role == "control") {
            auto control = RequestHandler::adopt(m_loop, m_options.socket_path,
                                                 static_cast<DaemonPort&>(*this), kept.fd);
            if (control) {
                m_control = std::move(*control);
            } else {
                log("error", control.error());
            }
        } else if (kept.role == "http") {
            m_http = std::make_unique<http::Endpoint>(*this);
            if (auto adopted = m_http->adopt(m_supervisor.daemon_spec().http, kept.fd); !adopted) {
                log("error", adopted.error());
            }
        } else if (kept.role == "records") {
            m_run_records.adopt(kept.fd, m_options.socket_path + ".runs");
        } else if (kept.role == "listen") {
            m_listen.adopt(kept.path, kept.fd);
        } else if (kept.role == "notify" && service) {
            std::size_t i = *service;
            std::uint64_t run = kept.run;
            auto socket = NotifySocket::adopt(
                m_loop, kept.path,
                [this, i, run](const NotifyMessage& message) {
                    resolve_launches_of(i);
                    m_supervisor.on_notify(i, run, message, now());
                    pump();
                },
                kept.fd);
            if (socket) {
                (*socket)->set_run_pgid(m_supervisor.service(i).pid());
                m_notify[i] = std::move(*socket);
            }
        } else if ((kept.role == "stdout" || kept.role == "stderr") && service) {
            auto& list = pipes_of(*service);
            RunPipes* pipes = nullptr;
            for (auto& p : list) {
                if (p->run == kept.run) {
                    pipes = p.get();
                }
            }
            if (pipes == nullptr) {
                pipes = list.emplace_back(
                                std::make_unique<RunPipes>(RunPipes{this, *service, kept.run}))
                            .get();
            }
            core::Stream stream =
                kept.role == "stdout" ? core::Stream::stdout_ : core::Stream::stderr_;
            attach_pipes(*service, *pipes, kept.fd, stream);
            (stream == core::Stream::stdout_ ? pipes->out : pipes->err)
                .restore_pending(kept.pending);
        } else {
            ::close(kept.fd);
        }
    }
    for (std::size_t i = 0; i < m_supervisor.size(); ++i) {
        if (!m_supervisor.retired(i) && m_supervisor.service(i).pid() != 0) {
            m_run_records.started(i, m_supervisor.service(i).pid());
        }
    }
    m_supervisor.resumed(at);
    // A run whose process is no child of ours any more (it cannot be: pkitd kept its
    // pid) ends as a run whose exit was not seen.
    std::vector<pid_t> lost;
    for (std::size_t i = 0; i < m_supervisor.size(); ++i) {
        pid_t pid = m_supervisor.retired(i) ? 0 : m_supervisor.service(i).pid();
        siginfo_t info{};
        if (pid != 0 &&
            ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 &&
            errno == ECHILD) {
            lost.push_back(pid);
        }
    }
    for (pid_t pid : lost) {
        log("warning",
            "pid " + std::to_string(pid) + " named by the handed-over state is no child of pkitd");
        m_supervisor.on_exit(pid, core::ProcessExit{}, now());
    }
    // The clients are taken over once this pkitd serves (take_clients_over); until then
    // no service inherits their descriptors.
    for (const CarriedClient& client : facts.clients) {
        set_cloexec(client.connection.fd, true);
    }
    m_takeover = upgrade::Takeover{std::move(facts.clients), saved, facts.from_version};
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
    std::size_t restarted = 0;
    for (std::size_t i = 0; takeover.from_scratch && i < m_supervisor.size(); ++i) {
        restarted += m_supervisor.retired(i) ? 0 : 1;
    }
    const proto::json result{{"from", takeover.from_version},
                             {"to", std::string(proto::version())},
                             {"pid", static_cast<int>(::getpid())},
                             {"restarted_services", restarted}};
    if (!m_control) {
        for (const CarriedClient& client : takeover.clients) {
            ::close(client.connection.fd);
        }
        return;
    }
    m_control->adopt_clients(std::move(takeover.clients), takeover.saved, result,
                             takeover.from_scratch);
}

}  // namespace pkit::shell
