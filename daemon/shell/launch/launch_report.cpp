// The parent's side of the close-on-exec report pipe: reading a child's report and
// naming its failure (SPEC §3: a launch failure is reported with its reason).

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "daemon/shell/launch/launch_child.hpp"
#include "daemon/shell/launch/launch_env.hpp"
#include "daemon/shell/launch/launcher.hpp"

namespace pkit::shell {

namespace {

using config::LaunchError;

LaunchError exec_error_kind(int error) {
    switch (error) {
        case ENOENT:
        case ENOTDIR:
            return LaunchError::not_found;
        case EACCES:
        case EPERM:
            return LaunchError::permission_denied;
        case ENOEXEC:
            return LaunchError::exec_format;
        case EAGAIN:
        case ENOMEM:
        case EMFILE:
        case ENFILE:
            return LaunchError::resources;
        default:
            return LaunchError::other;
    }
}

LaunchFailure describe(const ChildReport& report, const LaunchContext& context) {
    const char* reason = std::strerror(report.error);
    switch (static_cast<ChildStage>(report.stage)) {
        case ChildStage::setup:
            return make_failure(LaunchError::resources, "child setup", reason);
        case ChildStage::rlimit: {
            std::string what = "rlimit";
            if (report.index >= 0 &&
                static_cast<std::size_t>(report.index) < context.rlimits.size()) {
                what += " " + context.rlimits[static_cast<std::size_t>(report.index)];
            }
            return make_failure(LaunchError::resources, what, reason);
        }
        case ChildStage::cwd:
            return make_failure(LaunchError::bad_cwd, context.cwd, reason);
        case ChildStage::credentials:
            return make_failure(LaunchError::bad_user, context.user, reason);
        case ChildStage::exec:
            return make_failure(exec_error_kind(report.error), context.path, reason);
        case ChildStage::cgroup:
            return make_failure(LaunchError::resources, "cgroup " + context.cgroup, reason);
        case ChildStage::sandbox: {
            const auto index = static_cast<std::size_t>(report.index);
            return make_failure(LaunchError::sandbox,
                                report.index >= 0 && index < context.sandbox.size()
                                    ? context.sandbox[index]
                                    : std::string("[security]"),
                                reason);
        }
    }
    return make_failure(LaunchError::other, context.path, reason);
}

// Waits until `fd` is readable (data or end of file).
void wait_readable(int fd) {
    pollfd entry{fd, POLLIN, 0};
    while (poll(&entry, 1, -1) < 0 && errno == EINTR) {
    }
}

}  // namespace

void close_fds(std::initializer_list<int> fds) {
    for (int fd : fds) {
        if (fd >= 0) {
            close(fd);
        }
    }
}

std::optional<LaunchOutcome> read_launch_report(StartedLaunch& started, bool wait) {
    if (started.report_fd < 0) {
        return std::nullopt;
    }
    ChildReport record{};
    ssize_t n;
    for (;;) {
        n = read(started.report_fd, &record, sizeof record);
        if (n >= 0) {
            break;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno != EAGAIN) {
            break;  // reported below as a lost report
        }
        if (!wait) {
            return std::nullopt;  // the child is still between fork and exec
        }
        wait_readable(started.report_fd);
    }
    close(std::exchange(started.report_fd, -1));
    if (n == 0) {
        return LaunchOutcome{};  // end of file: the close-on-exec pipe went with the exec
    }
    close_fds({std::exchange(started.stdout_fd, -1), std::exchange(started.stderr_fd, -1)});
    if (n != static_cast<ssize_t>(sizeof record)) {
        return std::unexpected(
            make_failure(LaunchError::other, started.context.path, "lost the child's report"));
    }
    return std::unexpected(describe(record, started.context));
}

}  // namespace pkit::shell
