// Upgrading pkitd in place (SPEC §16): the check of the new binary, the hand-over
// (state into a memory file, the kept descriptors left open, execve) and, in the new
// pkitd, the resume that adopts them.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "daemon/core/persist.hpp"
#include "daemon/shell/control/request_handler.hpp"
#include "daemon/shell/daemon.hpp"
#include "daemon/shell/http/endpoint.hpp"
#include "daemon/shell/io/write_all.hpp"
#include "proto/version.hpp"

extern char** environ;

namespace pkit::shell {

namespace {

// The check may take this long before it counts as failed.
constexpr std::uint64_t k_check_timeout_ms = 5000;
// Its output is read up to this much.
constexpr std::size_t k_check_output_max = 4096;

bool set_cloexec(int fd, bool on) {
    int flags = ::fcntl(fd, F_GETFD);
    if (flags < 0) {
        return false;
    }
    flags = on ? (flags | FD_CLOEXEC) : (flags & ~FD_CLOEXEC);
    return ::fcntl(fd, F_SETFD, flags) == 0;
}

// What `BINARY --upgrade-check` printed: its version, and whether it reads the state
// version this pkitd writes.
struct CheckAnswer {
    std::string version;
    bool reads_ours = false;
};

CheckAnswer parse_check(const std::string& output) {
    CheckAnswer answer;
    std::istringstream lines(output);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::string key;
        words >> key;
        if (key == "pkitd") {
            words >> answer.version;
        } else if (key == "state-format") {
            int version = 0;
            while (words >> version) {
                answer.reads_ours = answer.reads_ours || version == core::k_state_version;
            }
        }
    }
    return answer;
}

}  // namespace

std::optional<std::string> Daemon::busy_for_upgrade() const {
    if (auto busy = m_supervisor.busy_for_upgrade()) {
        return busy;
    }
    if (m_loading.busy() || !m_reload_next.empty()) {
        return "a reload is in progress";
    }
    if (m_upgrade) {
        return "an upgrade is in progress";
    }
    // A group-mode run whose main process exited waits for its cgroup to empty; that
    // wait (at most its stop timeout) is not in the state.
    if (auto held = m_run_cgroups ? m_run_cgroups->any_held() : std::nullopt) {
        return "the run of " + *held + " is ending (its cgroup is not empty yet)";
    }
    return std::nullopt;
}

void Daemon::upgrade(std::string binary, UpgradeDone done) {
    if (binary.empty()) {
        binary = m_options.binary;
    }
    auto refuse = [&](const std::string& why) {
        log("error", "upgrade to " + binary + " refused: " + why);
        done(std::unexpected(why));
    };
    // A run between fork and exec has no pid to hand over yet: wait for it, as a
    // command on runs does.
    resolve_launches();
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
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        refuse(std::string("cannot make a pipe: ") + std::strerror(errno));
        return;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setflags(
        &attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
    std::string flag = "--upgrade-check";
    char* argv[] = {binary.data(), flag.data(), nullptr};
    pid_t pid = 0;
    int rc = posix_spawn(&pid, binary.c_str(), &actions, &attributes, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    ::close(pipe_fds[1]);
    if (rc != 0) {
        ::close(pipe_fds[0]);
        refuse("cannot run " + binary + " --upgrade-check: " + std::strerror(rc));
        return;
    }
    m_upgrade = std::make_unique<UpgradeCheck>(m_loop, [this] { hand_over(); });
    m_upgrade->binary = std::move(binary);
    m_upgrade->done = std::move(done);
    m_upgrade->pid = pid;
    m_upgrade->out = pipe_fds[0];
    m_upgrade->timeout.start(k_check_timeout_ms, [this] {
        if (m_upgrade && m_upgrade->pid != 0) {
            ::kill(m_upgrade->pid, SIGKILL);  // its exit ends the check, as failed
        }
    });
    log("info", "upgrade: checking " + m_upgrade->binary);
}

bool Daemon::on_upgrade_check(pid_t pid, int wait_status) {
    if (!m_upgrade || m_upgrade->pid != pid) {
        return false;
    }
    m_upgrade->pid = 0;
    m_upgrade->timeout.stop();
    // The child has exited: whatever it wrote is in the pipe.
    char buffer[1024];
    ssize_t n = 0;
    while (m_upgrade->output.size() < k_check_output_max &&
           (n = ::read(m_upgrade->out, buffer, sizeof buffer)) > 0) {
        m_upgrade->output.append(buffer, static_cast<std::size_t>(n));
    }
    const std::string binary = m_upgrade->binary;
    auto fail = [&](const std::string& why) {
        log("error", "upgrade to " + binary + " failed: " + why + "; nothing changed");
        UpgradeDone done = std::move(m_upgrade->done);
        m_upgrade.reset();
        done(std::unexpected(why));
    };
    if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
        fail(binary + " --upgrade-check " +
             (WIFSIGNALED(wait_status)
                  ? std::string("was killed by ") + sigabbrev_np(WTERMSIG(wait_status)) +
                        (WTERMSIG(wait_status) == SIGKILL ? " (no answer within 5 s)" : "")
                  : "exited " + std::to_string(WEXITSTATUS(wait_status))));
        return true;
    }
    CheckAnswer answer = parse_check(m_upgrade->output);
    if (answer.version.empty()) {
        fail(binary + " --upgrade-check did not say which pkitd it is");
        return true;
    }
    if (!answer.reads_ours) {
        fail(binary + " (pkitd " + answer.version + ") does not read state format " +
             std::to_string(core::k_state_version));
        return true;
    }
    if (auto busy = busy_for_upgrade(); busy && *busy != "an upgrade is in progress") {
        fail(*busy);
        return true;
    }
    m_upgrade->to_version = answer.version;
    // The next pkitd reads the configuration from disk: it must be the one running, or
    // the state would meet definitions it was not made with. Read off the loop.
    auto started =
        m_loading.start(m_options.config_dir, config::default_load_options(), m_options.load_cache,
                        [this](config::LoadResult tree) { on_upgrade_config(tree); });
    if (!started) {
        fail("cannot read the configuration: " + started.error());
    }
    return true;
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
        std::string why = differs->starts_with("the configuration")
                              ? *differs
                              : "the configuration on disk differs from the one running (" +
                                    *differs + "): reload first, then upgrade";
        log("error", "upgrade to " + m_upgrade->binary + " failed: " + why + "; nothing changed");
        UpgradeDone done = std::move(m_upgrade->done);
        m_upgrade.reset();
        done(std::unexpected(why));
        return;
    }
    UpgradeDone done = std::move(m_upgrade->done);
    done(std::pair{std::string(proto::version()), m_upgrade->to_version});
    // The reply is written (or queued) now; the exec follows at the next turn.
    m_upgrade->hand_over.schedule();
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

void Daemon::hand_over() {
    if (!m_upgrade) {
        return;
    }
    const std::string binary = m_upgrade->binary;
    const std::string to = m_upgrade->to_version;
    m_upgrade.reset();
    // Every run the core may name has its pid: launches in flight are resolved.
    resolve_launches();
    m_signal_pace.flush();  // the next pkitd knows nothing of signals still waiting
    if (auto busy = busy_for_upgrade()) {
        log("error", "upgrade to " + binary + " abandoned: " + *busy + "; nothing changed");
        return;
    }
    std::vector<int> kept;
    upgrade::DaemonFacts facts = hand_over_facts(kept);
    const core::TimePoint at = now().mono;
    std::string state = upgrade::write_state(m_supervisor, facts, at);
    int memfd = ::memfd_create("pkit-state", 0);  // not close-on-exec: the next pkitd reads it
    if (memfd < 0 || write_all(memfd, state) != state.size() || ::lseek(memfd, 0, SEEK_SET) != 0) {
        log("error", "upgrade to " + binary + " abandoned: cannot write the state: " +
                         std::strerror(errno) + "; nothing changed");
        if (memfd >= 0) {
            ::close(memfd);
        }
        return;
    }
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
                                     std::to_string(memfd)};
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
    log("info", "upgrading to pkitd " + to + " (" + binary + "): " + std::to_string(kept.size()) +
                    " descriptors and " + std::to_string(state.size()) +
                    " bytes of state handed over");
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
    ::close(memfd);
    log("error", "upgrade to " + binary + " failed: exec: " + std::strerror(error) +
                     "; pkitd goes on as it was");
}

void Daemon::resume(const upgrade::DaemonFacts& facts) {
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
    log("info", "upgraded from " + facts.from_version + " (pid " + std::to_string(::getpid()) +
                    ", " + std::to_string(m_supervisor.size()) + " services)");
}

}  // namespace pkit::shell
