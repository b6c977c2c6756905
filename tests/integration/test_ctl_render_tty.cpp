// pkitctl's colour decision (SPEC §10): colours only on a terminal, and never with
// NO_COLOR set. pkitctl runs on a pseudo-terminal through util-linux `script`.

#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// util-linux `script` found in PATH, or empty.
std::string script_path() {
    const char* path = std::getenv("PATH");
    std::string_view dirs = path != nullptr ? path : "/usr/bin:/bin";
    while (!dirs.empty()) {
        const auto colon = dirs.find(':');
        std::string candidate = std::string(dirs.substr(0, colon)) + "/script";
        if (::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
        dirs.remove_prefix(colon == std::string_view::npos ? dirs.size() : colon + 1);
    }
    return "";
}

// Runs `env ENV... PKITCTL_BIN --socket SOCKET ARGS...` on a pseudo-terminal; its
// output as the terminal showed it. `env_args` starts with "-u NO_COLOR" or sets it.
CommandResult ctl_on_terminal(const Daemon& pkitd, const std::string& env_args,
                              const std::string& args) {
    const std::string command = "env " + env_args + " '" + std::string(PKITCTL_BIN) +
                                "' --socket '" + pkitd.socket() + "' " + args;
    return run_command({script_path(), "-qfec", command, "/dev/null"}, 20s);
}

std::string why_no_terminal() {
    if (script_path().empty()) {
        return "util-linux script is missing: no pseudo-terminal to run pkitctl on";
    }
    const auto probe = run_command({script_path(), "-qfec", "test -t 1", "/dev/null"}, 10s);
    if (probe.exit_code != 0) {
        return "script does not give a terminal here (exit " + std::to_string(probe.exit_code) +
               "): " + probe.all();
    }
    return "";
}

}  // namespace

TEST_CASE("ctl render: status is coloured on a terminal, never with NO_COLOR") {
    if (const auto why = why_no_terminal(); !why.empty()) {
        PKIT_SKIP(why);
    }
    TempDir dir;
    dir.service("web", sh_command("exec sleep 1000"));
    dir.service("job", sh_command("exit 3") + restart_table("never", "1s"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 5s, "running");
    wait_status(client, "job", state_is("failed"), 5s, "failed");

    const std::string green_running = "\x1b[32mrunning\x1b[0m";
    const std::string red_failed = "\x1b[31mfailed\x1b[0m";

    auto coloured = ctl_on_terminal(pkitd, "-u NO_COLOR", "status");
    INFO("on a terminal:\n" << coloured.all());
    CHECK(coloured.exit_code == 0);
    CHECK(coloured.out.find(green_running) != std::string::npos);
    CHECK(coloured.out.find(red_failed) != std::string::npos);
    CHECK(coloured.out.find("exit 3") != std::string::npos);

    auto tree = ctl_on_terminal(pkitd, "-u NO_COLOR", "status --tree");
    INFO("--tree on a terminal:\n" << tree.all());
    CHECK(tree.exit_code == 0);
    CHECK(tree.out.find(green_running) != std::string::npos);

    // An empty NO_COLOR is not set (no-color.org): still coloured.
    auto empty = ctl_on_terminal(pkitd, "NO_COLOR=", "status");
    INFO("NO_COLOR empty:\n" << empty.all());
    CHECK(empty.out.find(green_running) != std::string::npos);

    auto no_color = ctl_on_terminal(pkitd, "NO_COLOR=1", "status");
    INFO("NO_COLOR=1:\n" << no_color.all());
    CHECK(no_color.exit_code == 0);
    CHECK(no_color.out.find("running") != std::string::npos);
    CHECK(no_color.out.find("\x1b[") == std::string::npos);

    // --json is the protocol's result as is, never coloured.
    auto as_json = ctl_on_terminal(pkitd, "-u NO_COLOR", "--json status");
    INFO("--json on a terminal:\n" << as_json.all());
    CHECK(as_json.exit_code == 0);
    CHECK(as_json.out.find("\"running\"") != std::string::npos);
    CHECK(as_json.out.find("\x1b[") == std::string::npos);

    // Off a terminal (a pipe), no colour even without NO_COLOR.
    const char* had = std::getenv("NO_COLOR");
    if (had == nullptr || *had == '\0') {
        auto piped = run_ctl({"--socket", pkitd.socket(), "status"});
        CHECK(piped.out.find("running") != std::string::npos);
        CHECK(piped.out.find("\x1b[") == std::string::npos);
    }

    // The start/stop/restart rows follow the same rule.
    auto restarted = ctl_on_terminal(pkitd, "-u NO_COLOR", "restart web");
    INFO("restart on a terminal:\n" << restarted.all());
    CHECK(restarted.exit_code == 0);
    CHECK(restarted.out.find("\x1b[") != std::string::npos);
    auto restarted_plain = ctl_on_terminal(pkitd, "NO_COLOR=yes", "restart web");
    CHECK(restarted_plain.exit_code == 0);
    CHECK(restarted_plain.out.find("\x1b[") == std::string::npos);
    CHECK(pkitd.stop() == 0);
}
