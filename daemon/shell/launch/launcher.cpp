#include "daemon/shell/launch/launcher.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>

#include "daemon/shell/launch/launch_child.hpp"
#include "daemon/shell/launch/launch_env.hpp"

namespace pkit::shell {

namespace {

using config::LaunchError;

struct Credentials {
    bool change = false;
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;
    std::string label;  // the user (or group) as written, for messages
    // The user's passwd entry, for the environment; unset without `user` or an entry.
    std::optional<Account> account;
};

std::string principal_label(const config::Principal& principal) {
    return principal.name ? *principal.name : std::to_string(principal.id.value_or(0));
}

// Resolves user and group in the parent, where getpwnam may allocate. A numeric user
// without a passwd entry runs with pkitd's group and no supplementary groups, as
// container runtimes do for `--user UID`.
std::expected<Credentials, LaunchFailure> resolve_credentials(const config::ProcessSpec& process) {
    Credentials result;
    if (!process.user.set() && !process.group.set()) {
        return result;
    }
    result.uid = geteuid();
    result.gid = getegid();
    std::optional<gid_t> primary;
    std::string account;
    if (process.user.set()) {
        result.label = principal_label(process.user);
        const passwd* entry = process.user.name ? getpwnam(process.user.name->c_str())
                                                : getpwuid(static_cast<uid_t>(*process.user.id));
        if (entry == nullptr && process.user.name) {
            return std::unexpected(
                make_failure(LaunchError::bad_user, result.label, "unknown user"));
        }
        if (entry != nullptr) {
            result.uid = entry->pw_uid;
            primary = entry->pw_gid;
            account = entry->pw_name;
            result.account = Account{entry->pw_name, entry->pw_dir != nullptr ? entry->pw_dir : "",
                                     entry->pw_shell != nullptr ? entry->pw_shell : ""};
        } else {
            result.uid = static_cast<uid_t>(*process.user.id);
        }
    }
    if (process.group.set()) {
        if (process.group.name) {
            const group* entry = getgrnam(process.group.name->c_str());
            if (entry == nullptr) {
                return std::unexpected(
                    make_failure(LaunchError::bad_user, *process.group.name, "unknown group"));
            }
            result.gid = entry->gr_gid;
        } else {
            result.gid = static_cast<gid_t>(*process.group.id);
        }
        if (result.label.empty()) {
            result.label = principal_label(process.group);
        }
    } else if (primary) {
        result.gid = *primary;
    }
    result.groups.assign(1, result.gid);
    if (!account.empty()) {
        int count = 32;
        result.groups.resize(static_cast<std::size_t>(count));
        while (getgrouplist(account.c_str(), result.gid, result.groups.data(), &count) < 0) {
            result.groups.resize(static_cast<std::size_t>(count) * 2);
            count = static_cast<int>(result.groups.size());
        }
        result.groups.resize(static_cast<std::size_t>(count));
    }
    // Running as pkitd's own identity needs no change, and a non-root pkitd could not
    // call setgroups anyway.
    result.change = result.uid != geteuid() || result.gid != getegid();
    return result;
}

// The command with its variables expanded; each argument stays one argument.
std::expected<std::vector<std::string>, LaunchFailure> expand_command(
    const std::vector<std::string>& command, const std::vector<std::string>& env) {
    std::vector<std::string> args;
    args.reserve(command.size());
    for (std::size_t i = 0; i < command.size(); ++i) {
        auto arg = expand_in(command[i], env, "command[" + std::to_string(i) + "]");
        if (!arg) {
            return std::unexpected(std::move(arg.error()));
        }
        args.push_back(std::move(*arg));
    }
    return args;
}

// Whether `fd` lies in the k_fd_reserve descriptors under the soft RLIMIT_NOFILE. The
// kernel gives the lowest free number, so a new fd there means that fewer than the
// reserve are left free.
bool in_fd_reserve(int fd, rlim_t& soft) {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
        return false;
    }
    soft = limit.rlim_cur;
    const rlim_t reserve = std::min<rlim_t>(k_fd_reserve, soft / 8);
    return static_cast<rlim_t>(fd) + reserve >= soft;
}

// The soft RLIMIT_NOFILE pkitd was started with, once raise_nofile_limit() has raised
// it: a fact about the process, set once before the first fork.
std::optional<rlimit>& original_nofile() {
    static std::optional<rlimit> value;
    return value;
}

}  // namespace

PreparedLaunch::~PreparedLaunch() {
    close_fds({parent.stdout_fd, parent.stderr_fd, parent.report_fd, child.stdout_fd,
               child.stderr_fd, child.report_fd, plan.cgroup_dir_fd, plan.cgroup_procs_fd});
    for (int fd : plan.listen.fds) {
        close_fds({fd});
    }
}

namespace {

// Opens the cgroup.procs the child writes itself into (join_cgroup in launch_child.cpp).
std::expected<void, LaunchFailure> open_cgroup(PreparedLaunch& prepared, const std::string& dir,
                                               bool clone_into) {
    if (dir.empty()) {
        return {};
    }
    prepared.parent.context.cgroup = dir;
    if (clone_into) {
        prepared.plan.cgroup_dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    prepared.plan.cgroup_procs_fd = open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if ((clone_into && prepared.plan.cgroup_dir_fd < 0) || prepared.plan.cgroup_procs_fd < 0) {
        return std::unexpected(
            make_failure(LaunchError::resources, "cgroup " + dir, std::strerror(errno)));
    }
    return {};
}

}  // namespace

std::expected<std::unique_ptr<PreparedLaunch>, LaunchFailure> prepare_launch(
    const LaunchRequest& request) {
    const config::ServiceSpec& spec = *request.spec;
    const config::ProcessSpec& process = *spec.process;
    if (spec.command.empty()) {
        return std::unexpected(make_failure(LaunchError::not_found, "\"\"", "empty command"));
    }
    auto credentials = resolve_credentials(process);
    if (!credentials) {
        return std::unexpected(std::move(credentials.error()));
    }
    auto env = build_environment(request, credentials->account ? &*credentials->account : nullptr);
    if (!env) {
        return std::unexpected(std::move(env.error()));
    }
    auto args = expand_command(spec.command, *env);
    if (!args) {
        return std::unexpected(std::move(args.error()));
    }
    std::optional<std::string> cwd;
    if (process.cwd) {
        auto expanded = expand_in(*process.cwd, *env, "cwd");
        if (!expanded) {
            return std::unexpected(std::move(expanded.error()));
        }
        cwd = std::move(*expanded);
    }
    auto path = resolve_program(args->front(), *env, cwd);
    if (!path) {
        return std::unexpected(std::move(path.error()));
    }

    auto prepared = std::make_unique<PreparedLaunch>();
    // Owned copies: a reload may replace the spec while the launch waits for the spawner.
    prepared->args = std::move(*args);
    prepared->env = std::move(*env);
    add_listen_env(prepared->env, request.listen);
    ChildPlan& plan = prepared->plan;
    plan.path = std::move(*path);
    plan.cwd = cwd.value_or("");
    plan.argv.reserve(prepared->args.size() + 1);
    for (auto& arg : prepared->args) {
        plan.argv.push_back(arg.data());
    }
    plan.argv.push_back(nullptr);
    plan.envp.reserve(prepared->env.size() + 1);
    for (auto& entry : prepared->env) {
        plan.envp.push_back(entry.data());
    }
    plan.envp.push_back(nullptr);
    if (auto listen = plan_listen(*prepared, request.listen); !listen) {
        return std::unexpected(std::move(listen.error()));
    }
    plan.umask =
        process.umask ? std::optional<mode_t>(static_cast<mode_t>(*process.umask)) : std::nullopt;
    plan.nofile = original_nofile();
    plan.record = request.record;
    for (const auto& limit : process.rlimits) {
        rlim_t value = limit.value ? static_cast<rlim_t>(*limit.value) : RLIM_INFINITY;
        plan.rlimits.push_back({limit.resource, rlimit{value, value}});
    }
    std::vector<std::string> sandbox_labels;
    if (spec.security->any()) {
        const uid_t run_uid = credentials->change ? credentials->uid : geteuid();
        plan.sandbox = plan_sandbox(*spec.security, run_uid, !plan.cwd.empty(), prepared->sandbox,
                                    sandbox_labels);
    }
    plan.change_credentials = credentials->change;
    plan.uid = credentials->uid;
    plan.gid = credentials->gid;
    plan.groups = credentials->groups;

    int out[2] = {-1, -1};
    int err[2] = {-1, -1};
    int report[2] = {-1, -1};
    // The report pipe is non-blocking at both ends: the child writes 12 bytes into an
    // empty pipe, and the parent reads it from the loop.
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
        pipe2(report, O_CLOEXEC | O_NONBLOCK) != 0) {
        int error = errno;
        close_fds({out[0], out[1], err[0], err[1], report[0], report[1]});
        return std::unexpected(make_failure(LaunchError::resources, "pipe", std::strerror(error)));
    }
    if (rlim_t soft = 0;
        in_fd_reserve(std::max({out[0], out[1], err[0], err[1], report[0], report[1]}), soft)) {
        close_fds({out[0], out[1], err[0], err[1], report[0], report[1]});
        return std::unexpected(make_failure(LaunchError::resources, "pipe",
                                            std::string(std::strerror(EMFILE)) +
                                                " (pkitd keeps the last descriptors under its "
                                                "limit of " +
                                                std::to_string(soft) +
                                                " for pkitctl, reloads and scrapes)"));
    }
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    prepared->child = ChildFds{out[1], err[1], report[1]};
    prepared->parent = StartedLaunch{-1, out[0], err[0], report[0], {}};
    LaunchContext& context = prepared->parent.context;
    context.path = plan.path;
    context.cwd = plan.cwd;
    context.user = std::move(credentials->label);
    context.sandbox = std::move(sandbox_labels);
    for (const auto& limit : process.rlimits) {
        context.rlimits.push_back(limit.name);
    }
    if (auto joined = open_cgroup(*prepared, request.cgroup_dir, request.cgroup_clone); !joined) {
        return std::unexpected(std::move(joined.error()));
    }
    return prepared;
}

std::expected<StartedLaunch, LaunchFailure> spawn_prepared(PreparedLaunch& prepared) {
    // Every signal stays blocked from clone until the child has reset the dispositions:
    // a signal landing in between would otherwise run pkitd's handler in the child and
    // write into libuv's signal pipe, which the child shares with pkitd.
    sigset_t all;
    sigset_t saved;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    pid_t pid = clone_child(prepared.plan, prepared.child);
    int clone_error = errno;
    pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    close_fds({std::exchange(prepared.child.stdout_fd, -1),
               std::exchange(prepared.child.stderr_fd, -1),
               std::exchange(prepared.child.report_fd, -1)});
    if (pid < 0) {
        return std::unexpected(
            make_failure(LaunchError::resources, "fork", std::strerror(clone_error)));
    }
    StartedLaunch started = std::move(prepared.parent);
    prepared.parent = StartedLaunch{};
    started.pid = pid;
    return started;
}

std::expected<StartedLaunch, LaunchFailure> start_launch(const LaunchRequest& request) {
    auto prepared = prepare_launch(request);
    if (!prepared) {
        return std::unexpected(std::move(prepared.error()));
    }
    return spawn_prepared(**prepared);
}

std::expected<Launched, LaunchFailure> launch(const LaunchRequest& request) {
    auto started = start_launch(request);
    if (!started) {
        return std::unexpected(std::move(started.error()));
    }
    LaunchOutcome outcome = *read_launch_report(*started, true);
    if (!outcome) {
        int status = 0;
        while (waitpid(started->pid, &status, 0) < 0 && errno == EINTR) {
        }
        return std::unexpected(std::move(outcome.error()));
    }
    return Launched{started->pid, started->stdout_fd, started->stderr_fd};
}

std::expected<std::string, LaunchFailure> expand_in_run_environment(const LaunchRequest& request,
                                                                    std::string_view text,
                                                                    std::string_view what) {
    auto credentials = resolve_credentials(*request.spec->process);
    if (!credentials) {
        return std::unexpected(std::move(credentials.error()));
    }
    auto env = build_environment(request, credentials->account ? &*credentials->account : nullptr);
    if (!env) {
        return std::unexpected(std::move(env.error()));
    }
    return expand_in(text, *env, what);
}

std::expected<void, int> raise_nofile_limit() {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
        return std::unexpected(errno);
    }
    if (!original_nofile()) {
        original_nofile() = limit;
    }
    if (limit.rlim_cur == limit.rlim_max) {
        return {};
    }
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
        return std::unexpected(errno);
    }
    return {};
}

bool signal_run(pid_t pid, int signo, bool group) {
    if (pid <= 1) {
        return false;
    }
    return kill(group ? -pid : pid, signo) == 0;
}

bool stop_class_signal(int signo) {
    return signo == SIGTSTP || signo == SIGTTIN || signo == SIGTTOU;
}

bool stop_signal(pid_t pid, int signo, bool group) {
    if (signo == SIGKILL || signo == SIGCONT) {
        return signal_run(pid, signo, group);
    }
    if (stop_class_signal(signo)) {
        // SIGCONT discards a pending SIGTSTP, SIGTTIN or SIGTTOU: it must come first.
        return signal_run(pid, SIGCONT, group) && signal_run(pid, signo, group);
    }
    bool sent = signal_run(pid, signo, group);
    if (sent) {
        signal_run(pid, SIGCONT, group);
    }
    return sent;
}

}  // namespace pkit::shell
