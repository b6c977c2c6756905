// pkitd: parses its command line, loads the configuration and hands over to the shell.

#include <fcntl.h>
#include <unistd.h>
#include <uv.h>

#include <malloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <expected>
#include <filesystem>
#include <future>
#include <iostream>
#include <optional>

#include "config/loader.hpp"
#include "daemon/core/persist.hpp"
#include "daemon/shell/cgroup/cgroup_limits.hpp"
#include "daemon/shell/daemon.hpp"
#include "daemon/shell/launch/sandbox_check.hpp"
#include "daemon/shell/upgrade/state_file.hpp"
#include "proto/socket_path.hpp"
#include "proto/version.hpp"

namespace {

struct Options {
    std::string config_dir;
    std::string socket;
    bool check = false;
    std::string log_format = "text";
    bool version = false;
    bool upgrade_check = false;
    int state_fd = -1;  // --upgrade-check --state FD: the trial of an upgrade in place
    int resume_fd = -1;
};

std::string env_or(const char* name, std::string fallback) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? std::string(value) : std::move(fallback);
}

// The default socket, /run/pkit/pkitd.sock, unless pkitd may not create /run/pkit and
// has a $XDG_RUNTIME_DIR (an unprivileged pkitd): then $XDG_RUNTIME_DIR/pkit/pkitd.sock,
// with a note for the log saying why.
std::string default_socket(std::string& note) {
    const std::string dir = "/run/pkit";
    bool usable = ::mkdir(dir.c_str(), 0755) == 0 ||
                  (errno == EEXIST && ::access(dir.c_str(), W_OK | X_OK) == 0);
    if (usable) {
        return pkit::proto::k_default_socket;
    }
    int error = errno;
    auto fallback = pkit::proto::runtime_dir_socket();
    if (!fallback) {
        return pkit::proto::k_default_socket;  // binding fails later with the reason
    }
    note = "cannot use " + dir + " (" + std::strerror(error) + "): control socket " + *fallback +
           " (under $XDG_RUNTIME_DIR)";
    return *fallback;
}

// SPEC §1: --socket, else $PKIT_SOCKET, else pkitd.toml's socket, else the default.
std::string socket_path(const Options& options, const pkit::config::Tree& tree, std::string& note) {
    if (!options.socket.empty()) {
        return options.socket;
    }
    std::string from_env = env_or("PKIT_SOCKET", "");
    if (!from_env.empty()) {
        return from_env;
    }
    if (tree.daemon.socket) {
        return *tree.daemon.socket;
    }
    return default_socket(note);
}

// What systemd handed pkitd in its environment (SPEC §11 "Under systemd"), taken out
// of the environment so that no service inherits it: a run gets NOTIFY_SOCKET only
// when its own [ready] notify asks for one (SPEC §3).
pkit::shell::SystemdEnvironment take_systemd_environment() {
    pkit::shell::SystemdEnvironment systemd;
    systemd.notify_socket = env_or("NOTIFY_SOCKET", "");
    std::string usec = env_or("WATCHDOG_USEC", "");
    std::string for_pid = env_or("WATCHDOG_PID", "");
    char* end = nullptr;
    unsigned long long value = std::strtoull(usec.c_str(), &end, 10);
    bool for_us = for_pid.empty() || for_pid == std::to_string(::getpid());
    if (!usec.empty() && end != nullptr && *end == '\0' && value > 0 && for_us) {
        systemd.watchdog = std::chrono::microseconds(value);
    }
    for (const char* name : {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"}) {
        ::unsetenv(name);
    }
    return systemd;
}

// The path of the running binary: what `upgrade` execs when given none. After the
// package manager replaced the file, /proc/self/exe says "(deleted)": the path is
// still where the new one is.
std::string running_binary() {
    std::error_code error;
    std::string path = std::filesystem::read_symlink("/proc/self/exe", error).string();
    const std::string deleted = " (deleted)";
    if (path.size() > deleted.size() && path.ends_with(deleted)) {
        path.resize(path.size() - deleted.size());
    }
    return path;
}

// The state a previous pkitd handed over in `fd` (SPEC §16): parsed where the memory
// file lies, mapped (no copy of its text stays on the heap), then closed.
std::expected<pkit::proto::JsonTree, std::string> read_state(int fd) {
    std::expected<pkit::proto::JsonTree, std::string> doc =
        std::unexpected("empty, or cannot be read");
    struct stat info {};
    if (::fstat(fd, &info) == 0 && info.st_size > 0) {
        auto size = static_cast<std::size_t>(info.st_size);
        void* at = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (at != MAP_FAILED) {
            doc =
                pkit::proto::JsonTree::parse(std::string_view(static_cast<const char*>(at), size));
            ::munmap(at, size);
        }
    }
    ::close(fd);
    return doc;
}

// Closes every descriptor above stderr but those of `keep`: what a previous pkitd left
// open that this one will not adopt (its listeners, its runs' pipes, its records' lock).
void close_inherited(const std::vector<int>& keep = {}) {
    std::vector<int> open;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
        int fd = std::atoi(entry.path().filename().c_str());
        if (fd > 2 && std::find(keep.begin(), keep.end(), fd) == keep.end()) {
            open.push_back(fd);
        }
    }
    for (int fd : open) {
        ::close(fd);
    }
}

// What a pkitd that cannot resume a handed-over state still takes over, when the state's
// daemon-wide part can be read: its listening control socket and its clients, so that
// none is cut off and the upgrade's own request is answered (with every service started
// afresh).
std::optional<pkit::shell::upgrade::Takeover> salvage(
    const std::expected<pkit::proto::JsonTree, std::string>& state) {
    if (!state) {
        return std::nullopt;
    }
    auto facts = pkit::shell::upgrade::read_facts(*state);
    if (!facts) {
        return std::nullopt;
    }
    pkit::shell::upgrade::Takeover takeover;
    takeover.from_scratch = true;
    takeover.from_version = facts->from_version;
    takeover.clients = std::move(facts->clients);
    for (const auto& kept : facts->fds) {
        if (kept.role == "control") {
            takeover.control_fd = kept.fd;
        }
    }
    return takeover;
}

// A descriptor handed over through the exec, close-on-exec again: no service inherits it.
void set_cloexec(int fd) {
    int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) {
        ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
}

// What an upgrade in place resumes (SPEC §16): the supervisor built from `tree` (the
// configuration as read from disk, given the counts `scale` set) and filled from the
// handed-over state, and the state's daemon-wide part; or why the state cannot be used.
// `tree` is used up either way.
struct Resumed {
    pkit::core::Supervisor supervisor;
    pkit::shell::upgrade::DaemonFacts facts;
};
std::expected<Resumed, std::string> resume_from(
    const std::expected<pkit::proto::JsonTree, std::string>& state, pkit::config::Tree tree) {
    if (!state) {
        return std::unexpected("the state is " + state.error());
    }
    auto facts = pkit::shell::upgrade::read_facts(*state);
    if (!facts) {
        return std::unexpected(facts.error());
    }
    pkit::shell::upgrade::apply_scaled(facts->scaled, tree);
    pkit::core::Supervisor supervisor(std::move(tree), nullptr);
    auto applied =
        pkit::shell::upgrade::apply_state(*state, supervisor, std::chrono::steady_clock::now());
    if (!applied) {
        return std::unexpected(applied.error());
    }
    return Resumed{std::move(supervisor), std::move(*facts)};
}

// Prints a load's errors; the exit status 2.
int configuration_errors(const std::string& dir,
                         const std::vector<pkit::config::Diagnostic>& errors) {
    for (const auto& diagnostic : errors) {
        std::cerr << diagnostic.to_string() << '\n';
    }
    std::cerr << "pkitd: " << errors.size() << " configuration error"
              << (errors.size() == 1 ? "" : "s") << " in " << dir << '\n';
    return 2;
}

// `--upgrade-check --state FD` (SPEC §16): the trial a pkitd runs on the binary it
// upgrades to, before its exec. Reads the state in FD whole, with the configuration,
// and builds every service from it as --resume would, touching no process, socket or
// file. Exit 0 when it could; else why not on stderr, and 1 (2 for the configuration).
int try_resume(const Options& options) {
    std::string dir =
        options.config_dir.empty() ? env_or("PKIT_CONFIG", "/etc/pkit") : options.config_dir;
    auto state = read_state(options.state_fd);
    auto tree = pkit::config::load_tree(dir, pkit::config::default_load_options(), nullptr);
    if (!tree) {
        return configuration_errors(dir, tree.error());
    }
    if (auto errors = pkit::shell::required_limit_errors(*tree, "/proc/self"); !errors.empty()) {
        return configuration_errors(dir, errors);
    }
    auto resumed = resume_from(state, std::move(*tree));
    if (!resumed) {
        std::cerr << "pkitd: cannot resume this state: " << resumed.error() << '\n';
        return 1;
    }
    std::cout << "pkitd " << pkit::proto::version() << "\nresumes " << resumed->supervisor.size()
              << " services and " << resumed->facts.clients.size() << " clients\n";
    return 0;
}

int run(const Options& options, pkit::shell::SystemdEnvironment systemd) {
    std::string dir =
        options.config_dir.empty() ? env_or("PKIT_CONFIG", "/etc/pkit") : options.config_dir;
    // The start-up load keeps nothing: the reload cache is filled by the first reload,
    // so a pkitd that is never reloaded holds one copy of each service, not two.
    // After an upgrade, the state is parsed on a second thread meanwhile.
    std::future<std::expected<pkit::proto::JsonTree, std::string>> state;
    if (options.resume_fd >= 0) {
        state = std::async(std::launch::async, read_state, options.resume_fd);
    }
    std::vector<pkit::config::Diagnostic> warnings;
    auto load_options = pkit::config::default_load_options();
    // pkitd's own loads keep the warnings every load reports for its log (SPEC §21).
    std::vector<pkit::config::Diagnostic> load_warnings;
    if (options.check) {
        load_options.warnings = &warnings;
    } else {
        load_options.load_warnings = &load_warnings;
    }
    // The files' parses are kept for the first reload, which would otherwise parse every
    // file again to apply one (at 10,000 services 200 ms instead of 30).
    auto load_cache = options.check ? nullptr : std::make_shared<pkit::config::LoadCache>();
    auto tree = pkit::config::load_tree(dir, load_options, load_cache.get());
    for (const auto& warning : warnings) {
        std::cerr << warning.to_string() << '\n';
    }
    if (!tree) {
        return configuration_errors(dir, tree.error());
    }
    // With cgroups = "required", a [resources] key whose controller this cgroup does
    // not have is a configuration error (SPEC §15).
    if (auto errors = pkit::shell::required_limit_errors(*tree, "/proc/self"); !errors.empty()) {
        return configuration_errors(dir, errors);
    }
    if (options.check) {
        // [resources] keys this pkitd would not apply here (SPEC §15): warnings only.
        for (const auto& warning : pkit::shell::limit_warnings(*tree, "/proc/self")) {
            std::cerr << warning.to_string() << '\n';
        }
        // [security] keys this pkitd could not apply here (SPEC §19): warnings only.
        if (std::ranges::any_of(tree->services,
                                [](const auto& spec) { return spec.security->any(); })) {
            const auto abilities = pkit::shell::sandbox_abilities_here();
            for (const auto& warning : pkit::shell::sandbox_warnings(*tree, abilities)) {
                std::cerr << warning.to_string() << '\n';
            }
        }
        std::cout << "configuration OK: " << tree->services.size() << " services in " << dir
                  << '\n';
        return 0;
    }
    pkit::shell::DaemonOptions daemon_options;
    daemon_options.config_dir = dir;
    daemon_options.socket_path = socket_path(options, *tree, daemon_options.socket_note);
    daemon_options.socket_from_config =
        tree->daemon.socket && daemon_options.socket_path == *tree->daemon.socket;
    daemon_options.log_format =
        options.log_format == "json" ? pkit::shell::LogFormat::json : pkit::shell::LogFormat::text;
    daemon_options.systemd = std::move(systemd);
    daemon_options.load_cache = std::move(load_cache);
    daemon_options.binary = running_binary();
    daemon_options.load_warnings = std::move(load_warnings);
    std::optional<pkit::core::Supervisor> resumed;
    if (options.resume_fd >= 0) {
        const auto state_read = state.get();
        auto prepared = resume_from(state_read, std::move(*tree));
        if (prepared) {
            resumed.emplace(std::move(prepared->supervisor));
            daemon_options.resume = std::move(prepared->facts);
        } else {
            // No run is adopted: the listeners are bound again and the runs the records
            // name are ended before every service starts afresh, with the files' own
            // counts of instances. Only the control socket and its clients are taken
            // over, when the state says which they are.
            std::cerr << "pkitd: cannot resume from the state the previous pkitd handed over: "
                      << prepared.error()
                      << "; ending the runs it left and starting every service afresh\n";
            daemon_options.salvage = salvage(state_read);
            std::vector<int> keep;
            if (daemon_options.salvage) {
                keep.push_back(daemon_options.salvage->control_fd);
                for (const auto& client : daemon_options.salvage->clients) {
                    keep.push_back(client.connection.fd);
                }
                for (int fd : keep) {
                    set_cloexec(fd);
                }
            }
            // A cache afresh first: the old one closes its watch's descriptor itself, and
            // an empty one holds none.
            daemon_options.load_cache = std::make_shared<pkit::config::LoadCache>();
            close_inherited(keep);
            tree = pkit::config::load_tree(dir, pkit::config::default_load_options(),
                                           daemon_options.load_cache.get());
            if (!tree) {
                return configuration_errors(dir, tree.error());
            }
        }
    }

    uv_loop_t* loop = uv_default_loop();
    int status = 0;
    {
        std::optional<pkit::shell::Daemon> daemon;
        if (resumed) {
            daemon.emplace(loop, std::move(*resumed), std::move(daemon_options));
        } else {
            daemon.emplace(loop, std::move(*tree), std::move(daemon_options));
        }
        status = daemon->run();
    }
    // Let the closed handles' callbacks free their memory.
    uv_run(loop, UV_RUN_NOWAIT);
    return status;
}

// Opens /dev/null on whichever of fds 0-2 is closed (`pkitd >&- 2>&-`). Otherwise the
// first descriptors pkitd opens (libuv's signal pipe, the socket) would take those
// numbers: log lines would go into them, and every forked child would break them when
// it sets up its own fds 0-2. Returns false when /dev/null cannot be opened.
bool open_standard_fds() {
    for (int fd = 0; fd <= 2; ++fd) {
        if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) {
            continue;
        }
        // The lowest free descriptor: `fd` itself, since those below it are open.
        int opened = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (opened < 0) {
            return false;
        }
        if (opened != fd) {
            ::dup2(opened, fd);
            ::close(opened);
        }
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    // Before anything else opens a descriptor.
    if (!open_standard_fds()) {
        return 3;
    }
    // One malloc arena for every thread, before any thread starts: the services a
    // reload reads are allocated on a worker thread and live on the loop, and with an
    // arena a thread each, memory freed by one reload was not reused by the next one
    // read on another thread (RSS grew 0.3-0.7 MB a cycle of 1,000 files added and
    // removed; bench/bench_churn.sh). pkitd's threads allocate little, and seldom at
    // the same time.
    ::mallopt(M_ARENA_MAX, 1);
    CLI::App app{
        "pkitd: a process supervisor. Reads DIR/pkitd.toml and DIR/services/*.toml, keeps\n"
        "every service running as configured, and answers pkitctl on a Unix socket.\n"
        "See pkitd(8), pkit.toml(5) and pkitctl(1).",
        "pkitd"};
    Options options;
    app.add_option("--config", options.config_dir,
                   "configuration directory (default: $PKIT_CONFIG, else /etc/pkit)")
        ->option_text("DIR");
    app.add_option("--socket", options.socket,
                   "control socket (default: $PKIT_SOCKET, else `socket` in pkitd.toml, else "
                   "/run/pkit/pkitd.sock; $XDG_RUNTIME_DIR/pkit/pkitd.sock for a pkitd that "
                   "cannot create /run/pkit)")
        ->option_text("PATH");
    app.add_flag("--check", options.check,
                 "load and validate the configuration, print every problem, start nothing");
    app.add_option("--log-format", options.log_format, "pkitd's own log on stderr: text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->option_text("text|json");
    app.add_flag("--version", options.version, "print the version and exit");
    auto* upgrade_check =
        app.add_flag("--upgrade-check", options.upgrade_check,
                     "print the version and the state formats this pkitd resumes from, and exit "
                     "(run by `pkitctl upgrade` on the new binary)");
    app.add_option("--state", options.state_fd,
                   "with --upgrade-check: read the state in descriptor FD and build every "
                   "service from it as --resume would, touching nothing; exit 0 if it can "
                   "(the trial an upgrade runs before its exec)")
        ->option_text("FD")
        ->check(CLI::NonNegativeNumber)
        ->needs(upgrade_check);
    app.add_option("--resume", options.resume_fd,
                   "take over from the pkitd that handed its state over in descriptor FD "
                   "(an upgrade in place; pkitd(8))")
        ->option_text("FD")
        ->check(CLI::NonNegativeNumber);
    app.footer(
        "Exit status: 0 after a requested shutdown; 1 when a failure escalated to the top of\n"
        "the tree; 2 invalid configuration; 3 fatal start-up error (socket); 128+N when a\n"
        "second signal N forced the shutdown. With exit_when = \"all_done\" (pkitd.toml):\n"
        "0 once every service ended done or stopped, 1 when one failed or is left waiting.");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);
        return code == 0 ? 0 : 2;
    }
    auto systemd = take_systemd_environment();
    if (options.upgrade_check && options.state_fd >= 0) {
        try {
            return try_resume(options);
        } catch (const std::exception& e) {
            std::cerr << "pkitd: cannot resume this state: " << e.what() << '\n';
            return 1;
        }
    }
    if (options.upgrade_check) {
        std::cout << "pkitd " << pkit::proto::version() << "\nstate-format";
        for (int v = pkit::core::k_oldest_state_version; v <= pkit::core::k_state_version; ++v) {
            std::cout << ' ' << v;
        }
        std::cout << '\n';
        return 0;
    }
    if (options.version) {
        std::cout << pkit::proto::version_line("pkitd") << '\n';
        return 0;
    }
    try {
        return run(options, std::move(systemd));
    } catch (const std::exception& e) {
        std::cerr << "pkitd: fatal: " << e.what() << '\n';
        return 3;
    }
}
