// config/accounts.hpp for pkitctl: `getent passwd NAME` / `getent group NAME`, whose
// third field is the id. pkitctl is linked statically, so the name service is left to
// getent(1) (Debian's libc-bin), which loads whatever NSS modules the system has.

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string_view>

#include "config/accounts.hpp"

extern char** environ;

namespace pkit::config {
namespace {

// The id in the first line of `getent DATABASE -- NAME`, or nullopt when getent cannot
// run, finds nothing (exit 2) or prints something else.
std::optional<std::uint32_t> getent_id(const char* database, const std::string& name) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
        return std::nullopt;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    std::string getent = "getent";
    std::string db = database;
    std::string dashes = "--";
    std::string key = name;
    char* argv[] = {getent.data(), db.data(), dashes.data(), key.data(), nullptr};
    pid_t pid = -1;
    int spawned = posix_spawnp(&pid, "getent", &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    std::string text;
    if (spawned == 0) {
        char buffer[4096];
        for (;;) {
            ssize_t got = read(out[0], buffer, sizeof buffer);
            if (got > 0) {
                text.append(buffer, static_cast<std::size_t>(got));
            } else if (got == 0 || errno != EINTR) {
                break;
            }
        }
    }
    close(out[0]);
    if (spawned != 0) {
        return std::nullopt;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        return std::nullopt;
    }
    // NAME:PASSWORD:ID:...
    std::string_view line(text);
    line = line.substr(0, line.find('\n'));
    std::size_t first = line.find(':');
    std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) {
        return std::nullopt;
    }
    std::string_view field = line.substr(second + 1);
    field = field.substr(0, field.find(':'));
    std::uint32_t id = 0;
    auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), id);
    if (error != std::errc{} || end != field.data() + field.size() || field.empty()) {
        return std::nullopt;
    }
    return id;
}

}  // namespace

std::optional<std::uint32_t> user_id(const std::string& name) {
    return getent_id("passwd", name);
}

std::optional<std::uint32_t> group_id(const std::string& name) {
    return getent_id("group", name);
}

}  // namespace pkit::config
