#include "tests/integration/harness_process.hpp"

#include "tests/integration/harness_doctest.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace pkit::itest {

namespace {

void drain_into(int fd, std::string& sink, bool& open) {
    char chunk[65536];
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n > 0) {
        sink.append(chunk, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
        open = false;
    }
}

}  // namespace

std::vector<std::string> child_environment(const std::vector<std::string>& extra) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string entry = *e;
        if (entry.rfind("PKIT_SOCKET=", 0) == 0 || entry.rfind("PKIT_CONFIG=", 0) == 0) {
            continue;
        }
        env.push_back(entry);
    }
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
}

int decode_wait_status(int status) {
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status);
    }
    return -1;
}

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const std::vector<std::string>& env) {
    std::vector<std::string> args = argv;
    std::vector<std::string> envs = child_environment(env);
    auto c_args = c_strings(args);
    auto c_envs = c_strings(envs);
    int out_pipe[2];
    int err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
        throw std::runtime_error("pipe2 failed");
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        ::dup2(null_fd, 0);
        ::dup2(out_pipe[1], 1);
        ::dup2(err_pipe[1], 2);
        ::execve(c_args[0], c_args.data(), c_envs.data());
        ::_exit(127);
    }
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    CommandResult result;
    bool out_open = true;
    bool err_open = true;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (out_open || err_open) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            result.timed_out = true;
            ::kill(pid, SIGKILL);
            break;
        }
        pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0},
                         {err_open ? err_pipe[0] : -1, POLLIN, 0}};
        if (::poll(fds, 2, static_cast<int>(left.count())) <= 0) {
            continue;
        }
        if (fds[0].revents != 0) {
            drain_into(out_pipe[0], result.out, out_open);
        }
        if (fds[1].revents != 0) {
            drain_into(err_pipe[0], result.err, err_open);
        }
    }
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.exit_code = result.timed_out ? -1 : decode_wait_status(status);
    return result;
}

CommandResult run_ctl(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
                      const std::vector<std::string>& env) {
    std::vector<std::string> argv{PKITCTL_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, timeout, env);
}

CommandResult run_pkitd(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
                        const std::vector<std::string>& env) {
    std::vector<std::string> argv{PKITD_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, timeout, env);
}

bool is_root() {
    return ::geteuid() == 0;
}

std::string pid_namespace_unavailable() {
    if (!is_root()) {
        return "needs root for unshare --pid";
    }
    if (!have_program("unshare")) {
        return "needs unshare (util-linux)";
    }
    std::vector<std::string> probe = {"/usr/bin/env"};
    for (auto& word : pid_namespace_wrapper()) {
        probe.push_back(std::move(word));
    }
    probe.push_back("/bin/true");
    const auto result = run_command(probe, std::chrono::seconds(10));
    if (result.exit_code != 0) {
        return "unshare --pid --fork --mount-proc fails here: " + result.all();
    }
    return {};
}

std::vector<std::string> pid_namespace_wrapper() {
    return {"unshare", "--pid", "--fork", "--mount-proc"};
}

bool have_program(const std::string& name) {
    if (name.find('/') != std::string::npos) {
        return ::access(name.c_str(), X_OK) == 0;
    }
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        if (::access((dir + "/" + name).c_str(), X_OK) == 0) {
            return true;
        }
    }
    return false;
}

double unix_now() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string python3() {
    if (!have_program("python3")) {
        return "";
    }
    const auto result =
        run_command({"/bin/sh", "-c", "python3 -c 'import sys; print(sys.executable)'"},
                    std::chrono::seconds(10));
    std::string path = result.out.substr(0, result.out.find('\n'));
    return result.exit_code == 0 && !path.empty() ? path : "";
}

std::vector<char*> c_strings(std::vector<std::string>& items) {
    std::vector<char*> out;
    for (auto& s : items) {
        out.push_back(s.data());
    }
    out.push_back(nullptr);
    return out;
}

int unused_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    ::close(fd);
    return ntohs(addr.sin_port);
}

BackgroundCtl::BackgroundCtl(const std::vector<std::string>& args, const std::string& out_path,
                             const std::string& err_path) {
    std::vector<std::string> argv{PKITCTL_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env = child_environment({});
    std::vector<char*> c_argv;
    for (auto& a : argv) {
        c_argv.push_back(a.data());
    }
    c_argv.push_back(nullptr);
    std::vector<char*> c_env;
    for (auto& e : env) {
        c_env.push_back(e.data());
    }
    c_env.push_back(nullptr);
    m_pid = ::fork();
    REQUIRE(m_pid >= 0);
    if (m_pid == 0) {
        const int in = ::open("/dev/null", O_RDONLY);
        const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || out < 0 || err < 0) {
            ::_exit(127);
        }
        ::dup2(in, 0);
        ::dup2(out, 1);
        ::dup2(err, 2);
        ::execve(c_argv[0], c_argv.data(), c_env.data());
        ::_exit(127);
    }
}

BackgroundCtl::~BackgroundCtl() {
    if (!m_status && m_pid > 0) {
        ::kill(m_pid, SIGKILL);
        int st = 0;
        ::waitpid(m_pid, &st, 0);
    }
}

void BackgroundCtl::signal(int sig) const {
    ::kill(m_pid, sig);
}

std::optional<int> BackgroundCtl::wait_exit(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!reap() && std::chrono::steady_clock::now() < deadline) {
        ::usleep(10000);
    }
    return m_status;
}

bool BackgroundCtl::reap() {
    if (m_status) {
        return true;
    }
    int st = 0;
    if (::waitpid(m_pid, &st, WNOHANG) == m_pid) {
        m_status = decode_wait_status(st);
        return true;
    }
    return false;
}

}  // namespace pkit::itest
