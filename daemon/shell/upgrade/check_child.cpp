#include "daemon/shell/upgrade/check_child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <sstream>

extern char** environ;

namespace pkit::shell::upgrade {

std::string CheckChild::Outcome::failure(std::chrono::milliseconds limit) const {
    if (timed_out) {
        std::ostringstream words;
        words << "did not finish within " << static_cast<double>(limit.count()) / 1000.0 << " s";
        return words.str();
    }
    if (WIFSIGNALED(wait_status)) {
        const char* name = sigabbrev_np(WTERMSIG(wait_status));
        return std::string("was killed by ") +
               (name != nullptr ? "SIG" + std::string(name)
                                : "signal " + std::to_string(WTERMSIG(wait_status)));
    }
    if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) != 0) {
        return "exited " + std::to_string(WEXITSTATUS(wait_status));
    }
    return "";
}

CheckChild::~CheckChild() {
    if (m_pid != 0) {
        ::kill(-m_pid, SIGKILL);
    }
    close_pipe();
}

void CheckChild::close_pipe() {
    if (m_out >= 0) {
        ::close(m_out);
        m_out = -1;
    }
}

std::expected<void, std::string> CheckChild::start(const std::vector<std::string>& argv,
                                                   int state_fd, std::chrono::milliseconds limit,
                                                   Done done) {
    if (m_pid != 0 || argv.empty()) {
        return std::unexpected("a check is running already");
    }
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        return std::unexpected(std::string("cannot make a pipe: ") + std::strerror(errno));
    }
    // The state goes in as descriptor 3; dup2 onto itself would leave it close-on-exec.
    int state = -1;
    if (state_fd >= 0) {
        state = ::fcntl(state_fd, F_DUPFD_CLOEXEC, 4);
        if (state < 0) {
            ::close(pipe_fds[0]);
            ::close(pipe_fds[1]);
            return std::unexpected(std::string("cannot pass the state: ") + std::strerror(errno));
        }
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
    if (state >= 0) {
        posix_spawn_file_actions_adddup2(&actions, state, 3);
    }
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
    std::vector<std::string> args = argv;
    std::vector<char*> pointers;
    for (std::string& arg : args) {
        pointers.push_back(arg.data());
    }
    pointers.push_back(nullptr);
    pid_t pid = 0;
    int rc =
        posix_spawn(&pid, args.front().c_str(), &actions, &attributes, pointers.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    ::close(pipe_fds[1]);
    if (state >= 0) {
        ::close(state);
    }
    if (rc != 0) {
        ::close(pipe_fds[0]);
        return std::unexpected("cannot run " + args.front() + ": " + std::strerror(rc));
    }
    m_pid = pid;
    m_out = pipe_fds[0];
    m_timed_out = false;
    m_limit = limit;
    m_done = std::move(done);
    m_timeout.start(static_cast<std::uint64_t>(limit.count()), [this] {
        if (m_pid != 0) {
            m_timed_out = true;
            ::kill(-m_pid, SIGKILL);  // its exit ends the check, as failed
        }
    });
    return {};
}

bool CheckChild::on_child(pid_t pid, int wait_status) {
    if (m_pid == 0 || pid != m_pid) {
        return false;
    }
    m_pid = 0;
    m_timeout.stop();
    Outcome outcome;
    outcome.wait_status = wait_status;
    outcome.timed_out = m_timed_out;
    // The child has exited: whatever it wrote is in the pipe.
    char buffer[1024];
    ssize_t n = 0;
    while (outcome.output.size() < k_output_max && (n = ::read(m_out, buffer, sizeof buffer)) > 0) {
        outcome.output.append(buffer, static_cast<std::size_t>(n));
    }
    if (outcome.output.size() > k_output_max) {
        outcome.output.resize(k_output_max);
    }
    close_pipe();
    m_outcome = std::move(outcome);
    m_report.schedule();
    return true;
}

void CheckChild::report() {
    Done done = std::move(m_done);
    m_done = nullptr;
    if (done) {
        done(std::move(m_outcome));  // may destroy this object
    }
}

CheckAnswer parse_check_answer(std::string_view output) {
    CheckAnswer answer;
    std::istringstream lines{std::string(output)};
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
                answer.formats.push_back(version);
            }
        }
    }
    return answer;
}

int common_format(const CheckAnswer& answer, int oldest, int newest) {
    int best = 0;
    for (int format : answer.formats) {
        if (format >= oldest && format <= newest) {
            best = std::max(best, format);
        }
    }
    return best;
}

std::string output_words(std::string_view output, std::size_t max_bytes) {
    std::string words;
    std::size_t at = 0;
    while (at < output.size()) {
        std::size_t end = output.find('\n', at);
        if (end == std::string_view::npos) {
            end = output.size();
        }
        std::string_view line = output.substr(at, end - at);
        at = end + 1;
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) {
            line.remove_prefix(1);
        }
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) {
            line.remove_suffix(1);
        }
        if (!line.empty()) {
            words += words.empty() ? "" : "; ";
            for (char c : line) {
                // A message travels in a JSON reply: printable ASCII only.
                auto byte = static_cast<unsigned char>(c);
                words += byte >= 0x20 && byte < 0x7f ? c : '?';
            }
        }
    }
    if (words.size() > max_bytes) {
        words.resize(max_bytes);
        words += "...";
    }
    return words;
}

}  // namespace pkit::shell::upgrade
