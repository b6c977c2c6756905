// pkitd: parses its command line, loads the configuration and hands over to the shell.

#include <fcntl.h>
#include <unistd.h>
#include <uv.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <iostream>

#include "config/loader.hpp"
#include "daemon/shell/daemon.hpp"

namespace {

struct Options {
    std::string config_dir;
    std::string socket;
    bool check = false;
    std::string log_format = "text";
    bool version = false;
};

std::string env_or(const char* name, std::string fallback) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? std::string(value) : std::move(fallback);
}

// SPEC §1: --socket, else $PKIT_SOCKET, else pkitd.toml's socket, else the default.
std::string socket_path(const Options& options, const pkit::config::Tree& tree) {
    if (!options.socket.empty()) {
        return options.socket;
    }
    std::string from_env = env_or("PKIT_SOCKET", "");
    if (!from_env.empty()) {
        return from_env;
    }
    return tree.daemon.socket.value_or("/run/pkit/pkitd.sock");
}

int run(const Options& options) {
    std::string dir =
        options.config_dir.empty() ? env_or("PKIT_CONFIG", "/etc/pkit") : options.config_dir;
    auto tree = pkit::config::load_tree(dir, pkit::config::default_load_options());
    if (!tree) {
        for (const auto& diagnostic : tree.error()) {
            std::cerr << diagnostic.to_string() << '\n';
        }
        std::cerr << "pkitd: " << tree.error().size() << " configuration error"
                  << (tree.error().size() == 1 ? "" : "s") << " in " << dir << '\n';
        return 2;
    }
    if (options.check) {
        std::cout << "configuration OK: " << tree->services.size() << " services in " << dir
                  << '\n';
        return 0;
    }
    pkit::shell::DaemonOptions daemon_options;
    daemon_options.config_dir = dir;
    daemon_options.socket_path = socket_path(options, *tree);
    daemon_options.socket_from_config =
        tree->daemon.socket && daemon_options.socket_path == *tree->daemon.socket;
    daemon_options.log_format =
        options.log_format == "json" ? pkit::shell::LogFormat::json : pkit::shell::LogFormat::text;

    uv_loop_t* loop = uv_default_loop();
    int status = 0;
    {
        pkit::shell::Daemon daemon(loop, std::move(*tree), std::move(daemon_options));
        status = daemon.run();
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
                   "/run/pkit/pkitd.sock)")
        ->option_text("PATH");
    app.add_flag("--check", options.check,
                 "load and validate the configuration, print every problem, start nothing");
    app.add_option("--log-format", options.log_format, "pkitd's own log on stderr: text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->option_text("text|json");
    app.add_flag("--version", options.version, "print the version and exit");
    app.footer(
        "Exit status: 0 after a requested shutdown; 1 when a failure escalated to the top of\n"
        "the tree; 2 invalid configuration; 3 fatal start-up error (socket); 128+N when a\n"
        "second signal N forced the shutdown.");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);
        return code == 0 ? 0 : 2;
    }
    // pkitd's own supervisor's sd_notify socket is not the services' business: a run
    // gets NOTIFY_SOCKET only when its [ready] asks for it (SPEC §3).
    ::unsetenv("NOTIFY_SOCKET");
    if (options.version) {
        std::cout << "pkitd " << PKIT_VERSION << '\n';
        return 0;
    }
    try {
        return run(options);
    } catch (const std::exception& e) {
        std::cerr << "pkitd: fatal: " << e.what() << '\n';
        return 3;
    }
}
