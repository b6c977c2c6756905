// Upgrading pkitd in place (SPEC §16): the check and the trial of the new binary, the
// hand-over (state into a memory file, the kept descriptors and the clients' left open,
// execve) and, in the new pkitd, the resume that adopts them and answers the clients.
// The steps are laid out in upgrade/attempt.hpp; the Upgrader drives them
// (upgrader.hpp). The next pkitd's resume is Daemon::resume.

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/core/persist.hpp"
#include "daemon/shell/io/write_all.hpp"
#include "daemon/shell/upgrade/upgrader.hpp"
#include "proto/version.hpp"

namespace pkit::shell::upgrade {

bool set_cloexec(int fd, bool on) {
    int flags = ::fcntl(fd, F_GETFD);
    if (flags < 0) {
        return false;
    }
    flags = on ? (flags | FD_CLOEXEC) : (flags & ~FD_CLOEXEC);
    return ::fcntl(fd, F_SETFD, flags) == 0;
}

namespace {

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

Upgrader::Upgrader(uv_loop_t* loop, UpgradeHost& host, ExecArgs exec)
    : m_loop(loop), m_host(host), m_exec(std::move(exec)) {}

void Upgrader::fail(const std::string& why) {
    if (!m_attempt) {
        return;
    }
    m_host.log("error",
               "upgrade to " + m_attempt->binary + " failed: " + why + "; nothing changed");
    DaemonPort::UpgradeDone done = std::move(m_attempt->done);
    m_attempt.reset();
    if (done) {
        done(std::unexpected(why));
    }
}

void Upgrader::upgrade(std::string binary, DaemonPort::UpgradeDone done) {
    if (binary.empty()) {
        binary = m_exec.binary;
    }
    auto refuse = [&](const std::string& why) {
        m_host.log("error", "upgrade to " + binary + " refused: " + why);
        done(std::unexpected(why));
    };
    if (m_attempt) {
        refuse("an upgrade is in progress; nothing changed");
        return;
    }
    // Busy states first, before anything runs.
    if (auto busy = m_host.busy_for_upgrade()) {
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
    auto attempt =
        std::make_unique<Attempt>(m_loop, binary, std::move(done), [this] { hand_over(); });
    auto started =
        attempt->child.start({binary, "--upgrade-check"}, -1, k_check_limit,
                             [this](CheckChild::Outcome outcome) { on_checked(outcome); });
    if (!started) {
        done = std::move(attempt->done);
        refuse(started.error());
        return;
    }
    m_attempt = std::move(attempt);
    m_host.log("info", "upgrade: checking " + binary);
}

bool Upgrader::on_child_exit(ChildExit& exit) {
    return m_attempt && m_attempt->child.on_child(exit.pid, exit.wait_status);
}

void Upgrader::on_checked(const CheckChild::Outcome& outcome) {
    const std::string& binary = m_attempt->binary;
    if (std::string failure = outcome.failure(k_check_limit); !failure.empty()) {
        fail(binary + " --upgrade-check " + failure);
        return;
    }
    CheckAnswer answer = parse_check_answer(outcome.output);
    if (answer.version.empty()) {
        fail(binary + " --upgrade-check did not say which pkitd it is");
        return;
    }
    m_attempt->format =
        common_format(answer, k_oldest_written_state_version, core::k_state_version);
    if (m_attempt->format == 0) {
        std::string formats;
        for (int v = core::k_state_version; v >= k_oldest_written_state_version; --v) {
            formats += (formats.empty() ? "" : " or ") + std::to_string(v);
        }
        fail(binary + " (pkitd " + answer.version + ") does not read state format " + formats);
        return;
    }
    if (auto busy = m_host.busy_for_upgrade()) {
        fail(*busy);
        return;
    }
    m_attempt->to_version = answer.version;
    // The next pkitd reads the configuration from disk: it must be the one running, or
    // the state would meet definitions it was not made with. Read off the loop.
    auto started = m_host.read_config([this](config::LoadResult tree) { on_config(tree); });
    if (!started) {
        fail("cannot read the configuration: " + started.error());
    }
}

void Upgrader::on_config(const config::LoadResult& tree) {
    if (!m_attempt) {
        return;
    }
    // What the configuration on disk says that the running one does not, if anything.
    auto differs_from_running = [&](const config::Tree& disk) -> std::optional<std::string> {
        if (!(disk.daemon == m_host.supervisor().daemon_spec())) {
            return "pkitd.toml";
        }
        std::size_t live = 0;
        for (std::size_t i = 0; i < m_host.supervisor().size(); ++i) {
            live += m_host.supervisor().retired(i) ? 0 : 1;
        }
        for (const config::ServiceSpec& spec : disk.services) {
            auto i = m_host.supervisor().find(spec.name);
            if (!i || !(m_host.supervisor().service(*i).spec() == spec)) {
                return spec.file;
            }
        }
        if (disk.services.size() != live) {
            return "a removed service file";
        }
        return std::nullopt;
    };
    std::optional<std::string> differs;
    std::vector<ScaledFact> facts = m_host.scaled_facts();
    if (!tree) {
        differs = "the configuration in " + m_exec.config_dir + " is not valid now";
    } else if (facts.empty()) {
        differs = differs_from_running(*tree);
    } else {
        // The counts `scale` set go in the state, and the next pkitd applies them to
        // what it reads (apply_scaled): compared with them applied, as it runs.
        config::Tree scaled = *tree;
        if (apply_scaled(facts, scaled).size() != facts.size()) {
            differs = "the instances of a file pkitctl scale scaled";
        } else {
            differs = differs_from_running(scaled);
        }
    }
    if (differs) {
        fail(differs->starts_with("the configuration")
                 ? *differs
                 : "the configuration on disk differs from the one running (" + *differs +
                       "): reload first, then upgrade");
        return;
    }
    if (m_attempt->format < 3) {
        // A pkitd that reads no format with clients has no trial either: the reply comes
        // now, before the exec, and the clients end at the exec, as they did then.
        DaemonPort::UpgradeDone done = std::move(m_attempt->done);
        m_attempt->done = nullptr;
        done(std::pair{std::string(proto::version()), m_attempt->to_version});
        m_attempt->exec_turn.schedule();
        return;
    }
    // The trial: the binary reads the state as the hand-over would write it now.
    std::vector<int> kept;
    auto file = state_file(m_host.upgrade_state(m_attempt->format, kept));
    if (!file) {
        fail(file.error());
        return;
    }
    const std::string binary = m_attempt->binary;
    auto started = m_attempt->child.start(
        {binary, "--upgrade-check", "--state", "3", "--config", m_exec.config_dir}, *file,
        k_trial_limit, [this](CheckChild::Outcome outcome) { on_tried(outcome); });
    ::close(*file);
    if (!started) {
        fail(started.error());
        return;
    }
    m_host.log("info", "upgrade: " + binary + " tries the state");
}

void Upgrader::on_tried(const CheckChild::Outcome& outcome) {
    if (std::string failure = outcome.failure(k_trial_limit); !failure.empty()) {
        std::string said = output_words(outcome.output);
        fail(m_attempt->binary + " cannot resume this pkitd's state: its trial " + failure +
             (said.empty() ? "" : ": " + said));
        return;
    }
    // Reported at a turn of its own (CheckChild), out of any batch: the exec goes now.
    hand_over();
}

void Upgrader::hand_over() {
    if (!m_attempt) {
        return;
    }
    const std::string binary = m_attempt->binary;
    const std::string to = m_attempt->to_version;
    // Every run the core may name has its pid: launches in flight are resolved (by
    // busy_for_upgrade), and the stop signals still paced go now.
    auto busy = m_host.busy_for_upgrade();
    m_host.flush_signals();  // the next pkitd knows nothing of signals still waiting
    if (busy) {
        if (!m_attempt->done) {
            // Answered already (a next pkitd without clients carried): only logged.
            m_host.log("error",
                       "upgrade to " + binary + " abandoned: " + *busy + "; nothing changed");
            m_attempt.reset();
            return;
        }
        fail(*busy);
        return;
    }
    // From here to the exec nothing returns to the loop: no connection is accepted (new
    // ones wait in the listening socket's backlog for the next pkitd), no request read.
    std::vector<int> kept;
    std::string state = m_host.upgrade_state(m_attempt->format, kept);
    auto memfd = state_file(state);
    if (!memfd) {
        fail(memfd.error());
        return;
    }
    kept.push_back(*memfd);
    for (int fd : kept) {
        set_cloexec(fd, false);
    }
    std::vector<std::string> args = {binary,
                                     "--config",
                                     m_exec.config_dir,
                                     "--socket",
                                     m_exec.socket,
                                     "--log-format",
                                     m_exec.log_format,
                                     "--resume",
                                     std::to_string(*memfd)};
    std::vector<char*> argv;
    for (std::string& arg : args) {
        argv.push_back(arg.data());
    }
    argv.push_back(nullptr);
    // What systemd gave pkitd goes to the next one, which takes it out again.
    const SystemdEnvironment& systemd = m_exec.systemd;
    if (!systemd.notify_socket.empty()) {
        ::setenv("NOTIFY_SOCKET", systemd.notify_socket.c_str(), 1);
    }
    if (systemd.watchdog) {
        ::setenv("WATCHDOG_USEC", std::to_string(systemd.watchdog->count()).c_str(), 1);
        ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
    }
    m_host.log("info", "upgrading to pkitd " + to + " (" + binary +
                           "): " + std::to_string(kept.size() - 1) + " descriptors and " +
                           std::to_string(state.size()) + " bytes of state (format " +
                           std::to_string(m_attempt->format) + ") handed over");
    m_host.flush_output();
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
    if (!m_attempt->done) {
        m_host.log("error",
                   "upgrade to " + binary + " failed: " + why + "; pkitd goes on as it was");
        m_attempt.reset();
        return;
    }
    fail(why);
}

}  // namespace pkit::shell::upgrade
