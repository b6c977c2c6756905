#include "daemon/shell/launch/launch_listen.hpp"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "daemon/shell/launch/launch_env.hpp"
#include "daemon/shell/launch/launcher.hpp"

namespace pkit::shell {

namespace {

constexpr std::string_view k_pid_key = "LISTEN_PID=";
// Digits of any pid_t and the NUL the child writes after them.
constexpr std::size_t k_pid_room = 24;

bool is_listen_entry(const std::string& entry) {
    return entry.starts_with("LISTEN_FDS=") || entry.starts_with("LISTEN_PID=") ||
           entry.starts_with("LISTEN_FDNAMES=");
}

}  // namespace

void add_listen_env(std::vector<std::string>& env, const std::vector<ListenFd>& listen) {
    std::erase_if(env, is_listen_entry);
    if (listen.empty()) {
        return;
    }
    std::string names;
    for (const ListenFd& socket : listen) {
        if (!names.empty()) {
            names += ':';
        }
        names += socket.name;
    }
    env.push_back("LISTEN_FDS=" + std::to_string(listen.size()));
    env.push_back("LISTEN_FDNAMES=" + names);
    // Zeros are a valid (empty) C string until the child writes its pid over them.
    std::string pid(k_pid_key);
    pid.resize(k_pid_key.size() + k_pid_room, '\0');
    env.push_back(std::move(pid));
}

std::expected<void, LaunchFailure> plan_listen(PreparedLaunch& prepared,
                                               const std::vector<ListenFd>& listen) {
    ChildListen& plan = prepared.plan.listen;
    for (const ListenFd& socket : listen) {
        int fd = fcntl(socket.fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0) {
            return std::unexpected(make_failure(config::LaunchError::resources,
                                                "listen socket " + socket.name,
                                                std::strerror(errno)));
        }
        plan.fds.push_back(fd);
    }
    if (listen.empty()) {
        return {};
    }
    prepared.listen_scratch.assign(listen.size(), -1);
    plan.scratch = prepared.listen_scratch.data();
    for (char* entry : prepared.plan.envp) {
        if (entry != nullptr && std::string_view(entry).starts_with(k_pid_key)) {
            plan.pid_digits = entry + k_pid_key.size();
        }
    }
    return {};
}

}  // namespace pkit::shell
